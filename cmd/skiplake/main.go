// Command skiplake reads, writes and maintains Delta Lake tables with data skipping.
//
// Usage: skiplake COMMAND TABLE [flags]. Run "skiplake help" for the commands. Errors go
// to stderr with a non-zero exit status; output formats are stable for scripts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
)

// command is one subcommand: it parses its own flags and returns an error; only main exits.
type command struct {
	name    string
	usage   string // argument synopsis
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch: its streams (tests substitute buffers).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// terminal reports whether stderr is a terminal (progress bars only then).
	terminal bool
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

// usageError marks errors caused by bad invocation (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, terminal: isTerminal(os.Stderr)}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// run executes one invocation and returns the exit status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				fmt.Fprintf(e.stdout, "usage: skiplake %s %s\n\n%s\n", c.name, c.usage, c.summary)
				return 0
			}
		}
		printUsage(e.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(e.stderr, "skiplake: unknown command %q\n", args[0])
		printUsage(e.stderr)
		return 2
	}
	if err := c.run(ctx, e, args[1:]); err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(e.stderr, "skiplake %s: %s\nusage: skiplake %s %s\n", c.name, ue.msg, c.name, c.usage)
			return 2
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(e.stderr, "skiplake %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: skiplake COMMAND TABLE [flags]\n\ncommands:")
	sorted := append([]*command(nil), commands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'skiplake help COMMAND' for a command's flags.")
}

// parseArgs parses flags that may appear before, between or after positional
// arguments (skiplake scan TABLE --filter ...), returning the positionals.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// listFlag collects a comma-separated list, repeatable.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// kvFlag collects repeated key=value pairs.
type kvFlag map[string]string

func (m kvFlag) String() string { return "" }
func (m kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	m[strings.TrimSpace(k)] = v
	return nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("CI") == ""
}

// tableArgs parses a command's flags, requires exactly one TABLE argument and checks
// that the parsed --format value is one of formats (the shape of most commands).
func tableArgs(fs *flag.FlagSet, args []string, format *string, formats ...string) (string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", err
	}
	path, err := oneTable(pos)
	if err != nil {
		return "", err
	}
	if err := checkFormat(*format, formats...); err != nil {
		return "", err
	}
	return path, nil
}

// writeJSONL writes one JSON document per line (the jsonl output format).
func writeJSONL[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON writes v as one indented JSON document (the json output format).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
