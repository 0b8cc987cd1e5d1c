package main

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestImportsOnlyTheTableFacade keeps the CLI a client of the library's public
// facade: of skiplake's own packages its non-test files import table, storage (table
// locations as users write them: file locations, redaction of secrets in messages),
// the storage backends (blank, to register their schemes), advise (the advisor's
// public entry point, which builds on table), input (the public reader of CSV, JSONL
// and Parquet input files, which library users call too) and the internal packages
// that serve the CLI alone (benchskip for the bench command, progress and render for
// output). A CLI that needs more of the
// library is a sign the facade lacks it: add it to table deliberately.
func TestImportsOnlyTheTableFacade(t *testing.T) {
	const module = "github.com/skiplake/skiplake"
	allowed := map[string]bool{
		module + "/table":              true,
		module + "/storage":            true, // locations: FileLocation, RedactLocation, LocationSecrets
		module + "/advise":             true, // the advisor's own public entry point (it builds on table)
		module + "/input":              true, // the public input readers append and merge use
		module + "/internal/benchskip": true,
		module + "/internal/progress":  true,
		module + "/internal/render":    true,
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
