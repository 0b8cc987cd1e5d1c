package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/skiplake/skiplake"

// floors maps a package path relative to the module ("table", "internal/dv") to its
// floor number in docs/architecture.md.
type floors map[string]int

var (
	floorRow   = regexp.MustCompile(`^\|\s*(\d+)\s*\|[^|]*\|(.*)\|\s*$`)
	packageRef = regexp.MustCompile("`([^`]+)`")
)

// parseFloors reads the floor table between the layering markers of architecture.md.
func parseFloors(doc []byte) (floors, error) {
	f := floors{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(text, "<!-- layering:"):
			in = true
			continue
		case strings.HasPrefix(text, "<!-- end layering"):
			in = false
			continue
		}
		if !in {
			continue
		}
		m := floorRow.FindStringSubmatch(text)
		if m == nil {
			continue // the header and separator rows
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("architecture.md:%d: floor %q: %w", line, m[1], err)
		}
		for _, ref := range packageRef.FindAllStringSubmatch(m[2], -1) {
			if prev, dup := f[ref[1]]; dup {
				return nil, fmt.Errorf("architecture.md:%d: package %s is on floors %d and %d", line, ref[1], prev, n)
			}
			f[ref[1]] = n
		}
	}
	if len(f) == 0 {
		return nil, fmt.Errorf("architecture.md: no floor table between the layering markers")
	}
	return f, nil
}

// graph maps each module package (relative path) to the module packages it imports
// (non-test imports only).
type graph map[string][]string

// check returns one message per breach of the layering: packages without a floor,
// floor entries naming no package, and imports of a package on the same or a higher
// floor. An empty result means the layering holds.
func check(g graph, f floors) []string {
	var out []string
	for pkg := range g {
		if _, ok := f[pkg]; !ok {
			out = append(out, fmt.Sprintf("package %s has no floor in docs/architecture.md", pkg))
		}
	}
	for pkg := range f {
		if _, ok := g[pkg]; !ok {
			out = append(out, fmt.Sprintf("docs/architecture.md puts %s on floor %d, but the module has no such package", pkg, f[pkg]))
		}
	}
	for pkg, imports := range g {
		from, ok := f[pkg]
		if !ok {
			continue
		}
		for _, imp := range imports {
			to, ok := f[imp]
			if ok && to >= from {
				out = append(out, fmt.Sprintf("%s (floor %d) imports %s (floor %d): a package may import only lower floors", pkg, from, imp, to))
			}
		}
	}
	sort.Strings(out)
	return out
}

// moduleGraph lists the module's packages and their module-internal imports.
func moduleGraph(t *testing.T, root string) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list ./...")
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			continue
		}
		g[rel] = nil
		for _, imp := range strings.Split(imports, ",") {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				g[rel] = append(g[rel], r)
			}
		}
	}
	return g
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root is two directories up")
	return root
}

func loadFloors(t *testing.T, root string) floors {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	f, err := parseFloors(doc)
	require.NoError(t, err)
	return f
}

// TestLayering is the check itself: the module as it is against the page as it is.
func TestLayering(t *testing.T) {
	root := repoRoot(t)
	f := loadFloors(t, root)
	g := moduleGraph(t, root)
	require.Empty(t, check(g, f), "the layering in docs/architecture.md does not hold")
}

// TestLayeringCatchesPlantedViolations proves the check can fail: the real graph with
// one edge planted at a time, and a package taken out of the table.
func TestLayeringCatchesPlantedViolations(t *testing.T) {
	root := repoRoot(t)
	f := loadFloors(t, root)
	real := moduleGraph(t, root)
	require.Empty(t, check(real, f))

	plant := func(from, to string) graph {
		g := graph{}
		for k, v := range real {
			g[k] = append([]string(nil), v...)
		}
		g[from] = append(g[from], to)
		return g
	}
	for _, tc := range []struct{ from, to, want string }{
		{"log", "internal/datafile", "log (floor 2) imports internal/datafile (floor 4)"},
		{"storage", "log", "storage (floor 0) imports log (floor 2)"},
		{"optimize", "table", "optimize (floor 6) imports table (floor 9)"},
		{"stats", "bloom", "stats (floor 1) imports bloom (floor 1)"}, // sideways
		{"internal/datafile", "internal/tableview", "internal/datafile (floor 4) imports internal/tableview (floor 5)"},
	} {
		got := check(plant(tc.from, tc.to), f)
		require.Len(t, got, 1, "planted %s -> %s", tc.from, tc.to)
		require.Contains(t, got[0], tc.want)
	}

	missing := floors{}
	for k, v := range f {
		if k != "vacuum" {
			missing[k] = v
		}
	}
	require.Equal(t, []string{"package vacuum has no floor in docs/architecture.md"}, check(real, missing))

	extra := floors{"nosuch/pkg": 3}
	for k, v := range f {
		extra[k] = v
	}
	require.Equal(t, []string{"docs/architecture.md puts nosuch/pkg on floor 3, but the module has no such package"}, check(real, extra))
}

func TestParseFloorsRefusesDuplicates(t *testing.T) {
	_, err := parseFloors([]byte("<!-- layering: x -->\n| 0 | a | `value` |\n| 1 | b | `value` |\n<!-- end layering -->\n"))
	require.ErrorContains(t, err, "package value is on floors 0 and 1")
	_, err = parseFloors([]byte("no table here\n"))
	require.ErrorContains(t, err, "no floor table")
}
