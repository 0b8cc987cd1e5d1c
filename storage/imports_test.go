package storage_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/skiplake/skiplake"

// localPackages are the packages a user who only wants local (or in-memory) tables
// imports; none of them may pull a cloud SDK into the user's build.
var localPackages = []string{
	module + "/table",
	module + "/storage",
	module + "/log",
	module + "/optimize",
	module + "/vacuum",
}

// cloudPrefixes are the import-path roots of the object-store SDKs and of the
// backends that wrap them. A backend is imported only blank, by whoever wants its
// scheme (the CLI imports them all).
var cloudPrefixes = []string{
	"github.com/aws",
	"cloud.google.com",
	"github.com/Azure",
	"github.com/AzureAD",
	"gocloud.dev",
	"google.golang.org/api",
	"github.com/googleapis",
	module + "/storage/s3",
	module + "/storage/gcs",
	module + "/storage/azure",
	module + "/storage/internal/blobstore",
}

// cloudRoot returns the prefix of cloudPrefixes that pkg is (or lies under), or "".
func cloudRoot(pkg string) string {
	for _, p := range cloudPrefixes {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return p
		}
	}
	return ""
}

// goListDeps returns, for pkgs and every package they import (not their tests'
// imports), as the go tool resolves them for this module, the package's import path
// mapped to its direct imports.
func goListDeps(t *testing.T, goTool string, pkgs ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}, pkgs...)
	out, err := exec.Command(goTool, args...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("go %s: %s", strings.Join(args, " "), msg)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			graph[f[0]] = f[1:]
		}
	}
	for _, p := range pkgs {
		if _, ok := graph[p]; !ok {
			t.Fatalf("go list -deps did not list the root %s (got %d packages)", p, len(graph))
		}
	}
	return graph
}

// cloudEdges returns, sorted, the imports "A imports B" in graph where A is not a
// cloud package and B is: the places a cloud SDK enters the graph.
func cloudEdges(graph map[string][]string) []string {
	var edges []string
	for pkg, imports := range graph {
		if cloudRoot(pkg) != "" {
			continue
		}
		for _, imp := range imports {
			if cloudRoot(imp) != "" {
				edges = append(edges, pkg+" imports "+imp)
			}
		}
	}
	sort.Strings(edges)
	return edges
}

// TestLocalTablesImportNoCloudSDK keeps the cloud SDKs out of the import graph of
// users who only want local tables: table, storage, log, optimize and vacuum must not
// import, directly or through any dependency, an AWS, Google Cloud, Azure or gocloud
// package, nor skiplake's own object-store backends (those register themselves when
// imported blank). It asks the go tool for the real dependency graph, so an import
// added anywhere below these packages is caught, and names the import that brings the
// SDK in. As a control, the backends' own graph must show every SDK family, proving
// the match finds what it looks for.
func TestLocalTablesImportNoCloudSDK(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH:", err)
	}

	graph := goListDeps(t, goTool, localPackages...)
	var cloud []string
	for pkg := range graph {
		if cloudRoot(pkg) != "" {
			cloud = append(cloud, pkg)
		}
	}
	if len(cloud) > 0 {
		sort.Strings(cloud)
		t.Errorf("%d cloud packages are in the import graph of %s, brought in by:\n\t%s",
			len(cloud), strings.Join(localPackages, ", "), strings.Join(cloudEdges(graph), "\n\t"))
	}

	// Control: the backends do import the SDKs, and the match sees each family.
	backends := goListDeps(t, goTool, module+"/storage/s3", module+"/storage/gcs", module+"/storage/azure")
	found := map[string]bool{}
	for pkg := range backends {
		found[cloudRoot(pkg)] = true
	}
	for _, want := range []string{"github.com/aws", "cloud.google.com", "github.com/Azure", "gocloud.dev", module + "/storage/s3"} {
		if !found[want] {
			t.Errorf("control: no package under %s in the backends' import graph; the check would not catch it", want)
		}
	}
	if edges := cloudEdges(backends); len(edges) == 0 {
		t.Error("control: cloudEdges finds no import of a cloud package in the backends' graph")
	}
}

func TestCloudRoot(t *testing.T) {
	for _, tc := range []struct{ pkg, want string }{
		{"github.com/aws/aws-sdk-go-v2/service/s3", "github.com/aws"},
		{"github.com/aws", "github.com/aws"},
		{"github.com/awslabs/other", ""},
		{"cloud.google.com/go/storage", "cloud.google.com"},
		{"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob", "github.com/Azure"},
		{"github.com/AzureAD/microsoft-authentication-library-for-go/apps", "github.com/AzureAD"},
		{"gocloud.dev/blob", "gocloud.dev"},
		{module + "/storage", ""},
		{module + "/storage/s3", module + "/storage/s3"},
		{module + "/storage/s3x", ""},
		{module + "/storage/internal/blobstore", module + "/storage/internal/blobstore"},
		{"net/http", ""},
	} {
		if got := cloudRoot(tc.pkg); got != tc.want {
			t.Errorf("cloudRoot(%q) = %q, want %q", tc.pkg, got, tc.want)
		}
	}
}
