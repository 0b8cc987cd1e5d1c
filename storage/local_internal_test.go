package storage

import (
	"path"
	"strings"
	"testing"
)

func TestTempName(t *testing.T) {
	for _, p := range []string{"a", "_delta_log/00000000000000000000.json", "d/" + strings.Repeat("x", 255)} {
		tmp, err := tempName(p)
		if err != nil {
			t.Fatal(err)
		}
		if path.Dir(tmp) != path.Dir(p) {
			t.Errorf("tempName(%q) = %q, not in the same directory", p, tmp)
		}
		if !isTempName(path.Base(tmp)) {
			t.Errorf("isTempName(%q) = false for a name made by tempName", tmp)
		}
		if n := len(path.Base(tmp)); n > 255 {
			t.Errorf("tempName(%q) has a %d-byte name, over NAME_MAX", p, n)
		}
		if err := ValidatePath(tmp); err != nil {
			t.Errorf("tempName(%q) = %q is not a valid path: %v", p, tmp, err)
		}
	}
	a, _ := tempName("x")
	b, _ := tempName("x")
	if a == b {
		t.Errorf("two temporary names for one target are equal: %q", a)
	}
}

func TestIsTempName(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"made by tempName", ".x.0123456789abcdef.skiplake-tmp", true},
		{"target name with dots", ".a.b.c.fedcba9876543210.skiplake-tmp", true},
		{"no leading dot", "x.0123456789abcdef.skiplake-tmp", false},
		{"uppercase hex", ".x.0123456789ABCDEF.skiplake-tmp", false},
		{"non-hex digit", ".x.0123456789abcdeg.skiplake-tmp", false},
		{"short random part", ".x.0123456789abcde.skiplake-tmp", false},
		{"other suffix", ".x.0123456789abcdef.tmp", false},
		{"Spark crc file", ".part-0.parquet.crc", false},
		{"suffix alone", ".skiplake-tmp", false},
		{"empty", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := isTempName(tc.in); got != tc.want {
				t.Fatalf("isTempName(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSubtreeMayMatch(t *testing.T) {
	cases := []struct {
		name                    string
		dir, prefix, startAfter string
		want                    bool
	}{
		{"prefix inside the directory", "a/", "a/b", "", true},
		{"directory inside the prefix", "a/b/", "a/", "", true},
		{"partial prefix covering the directory", "ab/", "a", "", true},
		{"unrelated directory", "b/", "a/", "", false},
		{"sibling sharing a byte prefix", "a-b/", "a/", "", false},
		{"whole directory before startAfter", "a/", "", "b", false},
		{"startAfter inside the directory", "a/", "", "a/m", true},
		{"startAfter equal to the directory name", "a/", "", "a", true},
		{"directory after startAfter", "c/", "", "b/z", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := subtreeMayMatch(tc.dir, tc.prefix, tc.startAfter); got != tc.want {
				t.Fatalf("subtreeMayMatch(%q, %q, %q) = %v, want %v", tc.dir, tc.prefix, tc.startAfter, got, tc.want)
			}
		})
	}
}
