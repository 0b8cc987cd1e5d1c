package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register(&command{name: "version", usage: "[--format text|json]",
		summary:  "print skiplake's module version, VCS revision and Go version",
		examples: []string{"skiplake version", "skiplake version --format json"},
		run:      runVersion})
}

// buildVersion is what "skiplake version" reports, from the binary's build info.
type buildVersion struct {
	Module    string `json:"module"`
	Version   string `json:"version"`            // module version: a tag, a pseudo-version or "(devel)"
	Revision  string `json:"revision,omitempty"` // VCS commit the binary was built from
	Time      string `json:"time,omitempty"`     // commit time (RFC 3339)
	Modified  bool   `json:"modified"`           // built from a tree with uncommitted changes
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

// readBuildVersion extracts the version fields from bi (nil when the binary carries
// no build info).
func readBuildVersion(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Module: "github.com/skiplake/skiplake", Version: "unknown", GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func runVersion(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	format := fs.String("format", "text", "text or json")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("version takes no arguments, got %d", len(pos))
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	v := readBuildVersion(bi)
	if *format == "json" {
		return writeJSON(e.stdout, v)
	}
	fmt.Fprintf(e.stdout, "skiplake %s (%s)\n", v.Version, v.Module)
	switch {
	case v.Revision == "":
		fmt.Fprintln(e.stdout, "revision unknown (no VCS information in this build: installed from a module version, or built by go run, go test or with -buildvcs=false)")
	default:
		mod := ""
		if v.Modified {
			mod = ", with uncommitted changes"
		}
		fmt.Fprintf(e.stdout, "revision %s (%s%s)\n", v.Revision, v.Time, mod)
	}
	fmt.Fprintf(e.stdout, "%s %s\n", v.GoVersion, v.Platform)
	return nil
}
