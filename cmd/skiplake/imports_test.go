package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsOnlyTheTableFacade keeps the CLI a client of the library's public
// facade: of skiplake's own packages its non-test files import table, storage (table
// locations as users write them: file locations, redaction of secrets in messages),
// the storage backends (blank, to register their schemes), advise (the advisor's
// public entry point, which builds on table), input (the public reader of CSV, JSONL
// and Parquet input files, which library users call too), the pure vocabulary
// packages value, expr and workload (scalars and type names, the filter grammar,
// workload files: they read no table), and the internal packages that serve the CLI
// alone (benchskip for the bench command, progress and render for output).
//
// The packages below the facade whose types and constants table's results and
// options use (log, optimize, vacuum, skipping) the CLI imports to name those
// (log.ConflictError, optimize.Plan, vacuum.SafetyFloor, skipping.LevelStats): table
// does not repeat them. It never calls their functions — every operation on a table
// goes through table — and TestNamesOnlyBelowTheFacade checks that. A CLI that needs
// more of the library is a sign the facade lacks it: add it to table deliberately.
func TestImportsOnlyTheTableFacade(t *testing.T) {
	const module = "github.com/skiplake/skiplake"
	allowed := map[string]bool{
		module + "/table":              true,
		module + "/storage":            true, // locations: FileLocation, RedactLocation, LocationSecrets
		module + "/advise":             true, // the advisor's own public entry point (it builds on table)
		module + "/input":              true, // the public input readers append and merge use
		module + "/value":              true, // scalars and type names (ColumnStats bounds, describe)
		module + "/expr":               true, // the filter grammar (flags checked before a table is opened)
		module + "/workload":           true, // workload files (optimize --workload, advise)
		module + "/internal/benchskip": true,
		module + "/internal/progress":  true,
		module + "/internal/render":    true,
	}
	for _, pkg := range namesOnly {
		allowed[module+"/"+pkg] = true
	}
	backends := map[string]bool{module + "/storage/azure": true, module + "/storage/gcs": true, module + "/storage/s3": true}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if path != module && !strings.HasPrefix(path, module+"/") {
				continue
			}
			blank := imp.Name != nil && imp.Name.Name == "_"
			switch {
			case allowed[path]:
			case backends[path] && blank:
			case backends[path]:
				t.Errorf("%s imports %s by name; storage backends are imported blank, to register their schemes", name, path)
			default:
				t.Errorf("%s imports %s; the CLI uses the library through package table only (re-export what it needs there)", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no Go files found")
	}
}

// namesOnly are the packages below the facade the CLI imports only to name their
// types, constants and error values, never to call a function.
var namesOnly = []string{"log", "optimize", "vacuum", "skipping"}

// TestNamesOnlyBelowTheFacade checks that the CLI's non-test files call no
// package-level function of the namesOnly packages: operations go through table.
func TestNamesOnlyBelowTheFacade(t *testing.T) {
	const module = "github.com/skiplake/skiplake"
	funcs := map[string]map[string]bool{} // import path -> exported top-level funcs
	for _, pkg := range namesOnly {
		funcs[module+"/"+pkg] = exportedFuncs(t, filepath.Join("..", "..", pkg))
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range calledFuncs(f, funcs) {
			t.Errorf("%s calls %s: the CLI operates on tables through package table only", fset.Position(call.Pos()), call.name)
		}
	}
}

// exportedFuncs lists the exported package-level functions of the package in dir.
func exportedFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() {
				out[fd.Name.Name] = true
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no exported functions found in %s", dir)
	}
	return out
}

// funcRef is a reference to a package-level function of a namesOnly package.
type funcRef struct {
	ast.Node
	name string
}

// calledFuncs returns every reference in f to a function in funcs (by import path),
// called or taken as a value, through whatever name the file imports its package as.
func calledFuncs(f *ast.File, funcs map[string]map[string]bool) []funcRef {
	local := map[string]map[string]bool{} // file-local package name -> funcs
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		fs, ok := funcs[path]
		if !ok {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = fs
	}
	var out []funcRef
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && local[id.Name][sel.Sel.Name] {
			out = append(out, funcRef{sel, id.Name + "." + sel.Sel.Name})
		}
		return true
	})
	return out
}

// TestNamesOnlyCatchesACall proves the check can fail: a planted call of a log
// function is found, a use of a log type and constant is not.
func TestNamesOnlyCatchesACall(t *testing.T) {
	const src = `package main

import dl "github.com/skiplake/skiplake/log"

var _ dl.ConflictError
var _ = dl.Serializable

func f() { _, _ = dl.ParseSize("1k") }
`
	f, err := parser.ParseFile(token.NewFileSet(), "planted.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := calledFuncs(f, map[string]map[string]bool{
		"github.com/skiplake/skiplake/log": exportedFuncs(t, filepath.Join("..", "..", "log")),
	})
	if len(got) != 1 || got[0].name != "dl.ParseSize" {
		t.Fatalf("found %v, want exactly dl.ParseSize", got)
	}
}
