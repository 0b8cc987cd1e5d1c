package storage_test

import (
	"errors"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/storage"
)

func TestValidatePath(t *testing.T) {
	cases := []struct {
		name string
		path string
		ok   bool
	}{
		{"accepts a plain name", "f", true},
		{"accepts a log file", "_delta_log/00000000000000000000.json", true},
		{"accepts decoded colons and spaces", "part=2021-09-08 11:11:11/f.parquet", true},
		{"accepts still-encoded colons as a literal name", "part=2021-09-08 11%3A11%3A11/f.parquet", true},
		{"accepts a literal %2F element (Spark's escaped '/')", "x=A%2FA/part-0.parquet", true},
		{"accepts a literal %2e%2e element: it is a name, not dot-dot", "%2e%2e/f", true},
		{"accepts a literal %2F as a whole element", "%2F", true},
		{"accepts plus and equals", "_2=bar+%22/x", true},
		{"accepts non-ASCII", "ünï/日本.json", true},
		{"accepts dot-prefixed names", ".part-0.parquet.crc", true},
		{"accepts three dots", "a/.../b", true},
		{"accepts dots inside names", "a..b/c.", true},
		{"accepts a colon after the first byte", "ab:c", true},
		{"accepts a drive-like element below the top", "a/C:/b", true},
		{"rejects the empty path", "", false},
		{"rejects absolute", "/a", false},
		{"rejects bare slash", "/", false},
		{"rejects dot-dot", "..", false},
		{"rejects leading dot-dot", "../a", false},
		{"rejects inner dot-dot", "a/../b", false},
		{"rejects trailing dot-dot", "a/..", false},
		{"rejects dot", ".", false},
		{"rejects leading dot element", "./a", false},
		{"rejects inner dot element", "a/./b", false},
		{"rejects trailing dot element", "a/.", false},
		{"rejects empty inner element", "a//b", false},
		{"rejects trailing slash", "a/", false},
		{"rejects backslash", `a\b`, false},
		{"rejects backslash dot-dot", `..\a`, false},
		{"rejects NUL", "a\x00", false},
		{"rejects drive letter", "C:", false},
		{"rejects drive path", "c:/x", false},
		{"rejects drive-relative", "Z:x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := storage.ValidatePath(tc.path)
			if tc.ok && err != nil {
				t.Fatalf("ValidatePath(%q) = %v, want nil", tc.path, err)
			}
			if !tc.ok {
				if !errors.Is(err, storage.ErrInvalidPath) {
					t.Fatalf("ValidatePath(%q) = %v, want ErrInvalidPath", tc.path, err)
				}
				if !strings.HasPrefix(err.Error(), "storage: ") {
					t.Fatalf("error %q lacks the package prefix", err)
				}
				if tc.path != "" && !strings.Contains(err.Error(), strconv.Quote(tc.path)) {
					t.Fatalf("error %q does not name the path", err)
				}
			}
		})
	}
}

func TestValidatePrefix(t *testing.T) {
	cases := []struct {
		name   string
		prefix string
		ok     bool
	}{
		{"accepts empty (everything)", "", true},
		{"accepts a directory", "_delta_log/", true},
		{"accepts a partial name", "_delta_log/0000000000000000001", true},
		{"accepts a nested directory", "a/b/", true},
		{"accepts a partial top-level name", "part=", true},
		{"rejects bare slash", "/", false},
		{"rejects double slash", "//", false},
		{"rejects absolute", "/a/", false},
		{"rejects dot-dot directory", "../", false},
		{"rejects escaping directory", "a/../../", false},
		{"rejects a dot-dot last element", "a/..", false},
		{"rejects empty element", "a//", false},
		{"rejects backslash", `a\`, false},
		{"rejects NUL", "\x00", false},
		{"rejects drive", "C:/", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := storage.ValidatePrefix(tc.prefix)
			if tc.ok != (err == nil) {
				t.Fatalf("ValidatePrefix(%q) = %v, want ok=%v", tc.prefix, err, tc.ok)
			}
			if err != nil && !errors.Is(err, storage.ErrInvalidPath) {
				t.Fatalf("ValidatePrefix(%q) = %v, not ErrInvalidPath", tc.prefix, err)
			}
		})
	}
}

// FuzzValidatePath checks that an accepted path is confined: relative, already clean,
// free of dot and dot-dot elements, backslashes and NULs; and that it is also an
// accepted List prefix, with or without a trailing '/'.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{
		"", "a", "/a", "..", "a/../b", "a//b", "a/", `a\b`, "a\x00", "C:", "c:x",
		"x=A%2FA/part-0.parquet", "%2e%2e", "part=2021-09-08 11:11:11/f", "ünï/日本",
		"a/./b", ".", "./", "...", ".a", "a/.b", "_delta_log/00000000000000000000.json",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := storage.ValidatePath(p)
		perr := storage.ValidatePrefix(p)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidPath) {
				t.Fatalf("ValidatePath(%q) = %v, not ErrInvalidPath", p, err)
			}
			return
		}
		if p == "" || p[0] == '/' {
			t.Fatalf("accepted %q: empty or absolute", p)
		}
		if path.Clean(p) != p {
			t.Fatalf("accepted %q which is not clean (Clean gives %q)", p, path.Clean(p))
		}
		if strings.ContainsAny(p, "\\\x00") {
			t.Fatalf("accepted %q with a backslash or NUL", p)
		}
		for _, e := range strings.Split(p, "/") {
			if e == "" || e == "." || e == ".." {
				t.Fatalf("accepted %q with element %q", p, e)
			}
		}
		if perr != nil {
			t.Fatalf("ValidatePath accepts %q but ValidatePrefix rejects it: %v", p, perr)
		}
		if err := storage.ValidatePrefix(p + "/"); err != nil {
			t.Fatalf("ValidatePrefix(%q) = %v, want nil", p+"/", err)
		}
	})
}
