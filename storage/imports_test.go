package storage_test

import (
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/skiplake/skiplake"

// localPackages are the packages a user who only wants local (or in-memory) tables
// imports, and examples/quickstart, a whole program of that kind. A program that
// imports only table depends on exactly table's packages (plus the runtime): none of
// them may pull a cloud SDK or gRPC into the user's build.
var localPackages = []string{
	module + "/table",
	module + "/storage",
	module + "/log",
	module + "/optimize",
	module + "/vacuum",
	module + "/examples/quickstart",
}

// forbiddenPrefixes are the import-path roots a local program must not depend on:
// the object-store SDKs and the backends that wrap them (a backend is imported only
// blank, by whoever wants its scheme; the CLI imports them all), and gRPC with the
// protocol-buffer and Google API packages it brings, which a library of local tables
// has no use for. arrow-go's Flight RPC package is the way gRPC came in: skiplake's
// code must not import it.
var forbiddenPrefixes = []string{
	"github.com/aws",
	"cloud.google.com",
	"github.com/Azure",
	"github.com/AzureAD",
	"gocloud.dev",
	"google.golang.org/api",
	"github.com/googleapis",
	"google.golang.org/grpc",
	"google.golang.org/genproto",
	"google.golang.org/protobuf",
	"github.com/golang/protobuf",
	"github.com/apache/arrow-go/v18/arrow/flight",
	module + "/storage/s3",
	module + "/storage/gcs",
	module + "/storage/azure",
	module + "/storage/internal/blobstore",
}

// allowedEdges are imports of a forbidden package the check tolerates, each with the
// reason. The only one: arrow-go's pqarrow (skiplake's Parquet reader and writer)
// imports arrow/flight, and through it gRPC, only to (de)serialise the Arrow schema
// it stores in a file's footer; arrow-go has no release without that import yet
// (v18.9.0, the newest, still has it). The edge is cut before the graph is
// searched, so gRPC reached any other way still fails the test, and once arrow-go
// drops the import the test fails until the allowance is removed.
var allowedEdges = map[[2]string]string{
	{"github.com/apache/arrow-go/v18/parquet/pqarrow", "github.com/apache/arrow-go/v18/arrow/flight"}: "pqarrow serialises the stored Arrow schema with flight.SerializeSchema",
}

// forbiddenRoot returns the prefix of forbiddenPrefixes that pkg is (or lies under),
// or "".
func forbiddenRoot(pkg string) string {
	for _, p := range forbiddenPrefixes {
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

// forbiddenChains searches graph from roots, not following the allowed edges, and
// returns, sorted, one import chain ("root -> a -> b -> forbidden") for every place a
// forbidden package enters: each import of a forbidden package by a package that is
// not one, with the shortest chain from a root to the importer. used reports which
// allowed edges the graph has (a stale allowance is one the graph no longer needs).
func forbiddenChains(graph map[string][]string, roots []string, allowed map[[2]string]string) (chains []string, used map[[2]string]bool) {
	used = map[[2]string]bool{}
	parent := map[string]string{}
	queue := slices.Clone(roots)
	for _, r := range roots {
		parent[r] = ""
	}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, imp := range graph[pkg] {
			if _, ok := allowed[[2]string{pkg, imp}]; ok {
				used[[2]string{pkg, imp}] = true
				continue
			}
			if forbiddenRoot(imp) != "" {
				if forbiddenRoot(pkg) == "" {
					chain := []string{imp, pkg}
					for p := parent[pkg]; p != ""; p = parent[p] {
						chain = append(chain, p)
					}
					slices.Reverse(chain)
					chains = append(chains, strings.Join(chain, " -> "))
				}
				continue // what a forbidden package imports is its own business
			}
			if _, seen := parent[imp]; !seen {
				parent[imp] = pkg
				queue = append(queue, imp)
			}
		}
	}
	sort.Strings(chains)
	return chains, used
}

// TestLocalProgramsImportNoCloudSDKOrGRPC keeps the cloud SDKs and gRPC out of the
// build of users who only want local tables: table (what a program that imports only
// table depends on), storage, log, optimize, vacuum and examples/quickstart must not
// import, directly or through any dependency, an AWS, Google Cloud, Azure or gocloud
// package, skiplake's own object-store backends (those register themselves when
// imported blank), gRPC, protocol buffers or Google's API packages. It asks the go
// tool for the real dependency graph, so an import added anywhere below these
// packages is caught, and names the chain of imports that brings each one in. As a
// control, the CLI's graph (it imports every backend) must show every SDK family and
// gRPC, proving the match finds what it looks for.
func TestLocalProgramsImportNoCloudSDKOrGRPC(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH:", err)
	}

	graph := goListDeps(t, goTool, localPackages...)
	chains, used := forbiddenChains(graph, localPackages, allowedEdges)
	if len(chains) > 0 {
		t.Errorf("cloud SDK or gRPC packages are in the import graph of %s; %d import chains bring them in:\n\t%s",
			strings.Join(localPackages, ", "), len(chains), strings.Join(chains, "\n\t"))
	}
	for edge, why := range allowedEdges {
		if !used[edge] {
			t.Errorf("allowed import %s -> %s (%s) is no longer in the graph: remove it from allowedEdges", edge[0], edge[1], why)
		}
	}

	// Control: the CLI, which imports every backend, does depend on the SDKs and
	// gRPC; the match sees each family and the chains name the backends.
	cli := goListDeps(t, goTool, module+"/cmd/skiplake")
	found := map[string]bool{}
	for pkg := range cli {
		found[forbiddenRoot(pkg)] = true
	}
	for _, want := range []string{"github.com/aws", "cloud.google.com", "github.com/Azure", "gocloud.dev", "google.golang.org/grpc", module + "/storage/s3"} {
		if !found[want] {
			t.Errorf("control: no package under %s in the CLI's import graph; the check would not catch it", want)
		}
	}
	cliChains, _ := forbiddenChains(cli, []string{module + "/cmd/skiplake"}, allowedEdges)
	if !slices.Contains(cliChains, module+"/cmd/skiplake -> "+module+"/storage/gcs") {
		t.Errorf("control: the CLI's chains do not name its import of the GCS backend:\n\t%s", strings.Join(cliChains, "\n\t"))
	}
}

// TestForbiddenChains: the chain named is the shortest from a root, every entry
// point is named once per importer, imports among forbidden packages are not, and an
// allowed edge is cut (and reported as used).
func TestForbiddenChains(t *testing.T) {
	const (
		pq     = "github.com/apache/arrow-go/v18/parquet/pqarrow"
		flight = "github.com/apache/arrow-go/v18/arrow/flight"
		grpc   = "google.golang.org/grpc"
	)
	graph := map[string][]string{
		"main":                        {module + "/table", "fmt"},
		module + "/table":             {module + "/internal/datafile", module + "/log"},
		module + "/log":               {module + "/internal/datafile"},
		module + "/internal/datafile": {pq},
		pq:                            {flight, "github.com/apache/arrow-go/v18/arrow/ipc"},
		flight:                        {grpc},
		grpc:                          {"google.golang.org/protobuf/proto"},
	}
	allowed := map[[2]string]string{{pq, flight}: "test"}
	chains, used := forbiddenChains(graph, []string{"main"}, allowed)
	if len(chains) != 0 || !used[[2]string{pq, flight}] {
		t.Fatalf("with the allowance: chains %q, used %v; want none, the allowance used", chains, used)
	}
	chains, _ = forbiddenChains(graph, []string{"main"}, nil)
	want := []string{"main -> " + module + "/table -> " + module + "/internal/datafile -> " + pq + " -> " + flight}
	if !slices.Equal(chains, want) {
		t.Fatalf("without the allowance: chains\n%q\nwant\n%q", chains, want)
	}
	graph[module+"/log"] = append(graph[module+"/log"], "cloud.google.com/go/storage")
	chains, _ = forbiddenChains(graph, []string{"main"}, allowed)
	want = []string{"main -> " + module + "/table -> " + module + "/log -> cloud.google.com/go/storage"}
	if !slices.Equal(chains, want) {
		t.Fatalf("a planted import: chains\n%q\nwant\n%q", chains, want)
	}
}

func TestForbiddenRoot(t *testing.T) {
	for _, tc := range []struct{ pkg, want string }{
		{"github.com/aws/aws-sdk-go-v2/service/s3", "github.com/aws"},
		{"github.com/aws", "github.com/aws"},
		{"github.com/awslabs/other", ""},
		{"cloud.google.com/go/storage", "cloud.google.com"},
		{"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob", "github.com/Azure"},
		{"github.com/AzureAD/microsoft-authentication-library-for-go/apps", "github.com/AzureAD"},
		{"gocloud.dev/blob", "gocloud.dev"},
		{"google.golang.org/grpc/codes", "google.golang.org/grpc"},
		{"google.golang.org/genproto/googleapis/rpc/status", "google.golang.org/genproto"},
		{"github.com/apache/arrow-go/v18/arrow/flight/gen/flight", "github.com/apache/arrow-go/v18/arrow/flight"},
		{"github.com/apache/arrow-go/v18/arrow/ipc", ""},
		{module + "/storage", ""},
		{module + "/storage/s3", module + "/storage/s3"},
		{module + "/storage/s3x", ""},
		{module + "/storage/internal/blobstore", module + "/storage/internal/blobstore"},
		{"net/http", ""},
	} {
		if got := forbiddenRoot(tc.pkg); got != tc.want {
			t.Errorf("forbiddenRoot(%q) = %q, want %q", tc.pkg, got, tc.want)
		}
	}
}
