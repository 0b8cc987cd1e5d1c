package storage_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
)

func TestParseLocation(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, in   string
		wantScheme string
		wantDir    string // local locations
		wantHost   string // URL locations
		wantErr    string // substring; "" means success
		wantIs     error
	}{
		{name: "relative path", in: "t", wantScheme: "file", wantDir: filepath.Join(wd, "t")},
		{name: "absolute path", in: "/data/t", wantScheme: "file", wantDir: "/data/t"},
		{name: "path with colon later", in: "dir/x:y", wantScheme: "file", wantDir: filepath.Join(wd, "dir/x:y")},
		{name: "file URL", in: "file:///data/t", wantScheme: "file", wantDir: "/data/t"},
		{name: "file URL localhost", in: "file://localhost/data/t", wantScheme: "file", wantDir: "/data/t"},
		{name: "file URL one slash", in: "file:/data/t", wantScheme: "file", wantDir: "/data/t"},
		{name: "file URL percent-decoded", in: "file:///data/my%20table", wantScheme: "file", wantDir: "/data/my table"},
		{name: "file URL other host", in: "file://server/data/t", wantErr: "not host"},
		{name: "file URL with query", in: "file:///data/t?x=1", wantErr: "no query"},
		{name: "s3 URL", in: "s3://bucket/tables/t?region=eu-west-1", wantScheme: "s3", wantHost: "bucket"},
		{name: "scheme is case-insensitive", in: "S3://bucket/t", wantScheme: "s3", wantHost: "bucket"},
		{name: "gs URL", in: "gs://b/p", wantScheme: "gs", wantHost: "b"},
		{name: "azblob URL", in: "azblob://container/p", wantScheme: "azblob", wantHost: "container"},
		{name: "unregistered scheme parses", in: "foo://b/t", wantScheme: "foo", wantHost: "b"},
		{name: "s3 without slashes", in: "s3:bucket/t", wantIs: storage.ErrUnknownScheme, wantErr: "without"},
		{name: "no bucket", in: "s3:///t", wantErr: "no bucket"},
		{name: "credentials refused", in: "s3://AKIAEXAMPLE:secret@bucket/t", wantErr: "credentials in the URL are not accepted"},
		{name: "empty", in: "", wantErr: "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			loc, err := storage.ParseLocation(tc.in)
			if tc.wantErr != "" || tc.wantIs != nil {
				if err == nil {
					t.Fatalf("ParseLocation(%q) = %+v, want an error", tc.in, loc)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not mention %q", err, tc.wantErr)
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Fatalf("error %v is not %v", err, tc.wantIs)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %q prints the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLocation(%q): %v", tc.in, err)
			}
			if loc.Scheme != tc.wantScheme {
				t.Fatalf("Scheme = %q, want %q", loc.Scheme, tc.wantScheme)
			}
			if tc.wantDir != "" && (loc.Dir != tc.wantDir || !loc.IsLocal()) {
				t.Fatalf("Dir = %q (local %v), want %q", loc.Dir, loc.IsLocal(), tc.wantDir)
			}
			if tc.wantHost != "" && (loc.URL == nil || loc.URL.Host != tc.wantHost) {
				t.Fatalf("URL = %v, want host %q", loc.URL, tc.wantHost)
			}
		})
	}
}

// TestOpenURLUnknownScheme: no backend package is imported in this test binary, so an
// s3:// location fails with ErrUnknownScheme naming the package to import, an unknown
// scheme lists the registered ones, and neither creates anything locally.
func TestOpenURLUnknownScheme(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	_, err := storage.CreateURL(ctx, "s3://bucket/t")
	if !errors.Is(err, storage.ErrUnknownScheme) || !strings.Contains(err.Error(), "storage/s3") {
		t.Fatalf("CreateURL(s3://...) = %v, want ErrUnknownScheme naming storage/s3", err)
	}
	_, err = storage.OpenURL(ctx, "foo://bucket/t")
	if !errors.Is(err, storage.ErrUnknownScheme) || !strings.Contains(err.Error(), "registered: file") {
		t.Fatalf("OpenURL(foo://...) = %v, want ErrUnknownScheme listing the schemes", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("failed opens created %d entries locally (%s)", len(entries), entries[0].Name())
	}
}

// TestRegisterCustomScheme: a registered opener receives the parsed URL and the
// create flag; plain paths stay local.
func TestRegisterCustomScheme(t *testing.T) {
	var gotURL *url.URL
	var gotCreate bool
	storage.Register("skiplake-test-mem", func(_ context.Context, u *url.URL, create bool) (storage.Storage, error) {
		gotURL, gotCreate = u, create
		return storage.NewMemory(), nil
	})
	st, err := storage.CreateURL(context.Background(), "skiplake-test-mem://bucket/a/b?x=1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*storage.Memory); !ok || gotURL.Host != "bucket" || gotURL.Path != "/a/b" || gotURL.Query().Get("x") != "1" || !gotCreate {
		t.Fatalf("opener got %v create=%v, store %T", gotURL, gotCreate, st)
	}
	dir := filepath.Join(t.TempDir(), "new", "table")
	st, err = storage.CreateURL(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := st.(*storage.Local); !ok || l.Root() != dir {
		t.Fatalf("CreateURL(path) = %T, want a Local rooted at %s", st, dir)
	}
	if _, err := storage.OpenURL(context.Background(), filepath.Join(t.TempDir(), "missing")); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("OpenURL of a missing directory = %v, want ErrNotExist", err)
	}
}

// FuzzParseLocation: ParseLocation never panics; a local result is an absolute
// directory, a URL result has a bucket and no user information, and an error never
// repeats a password given in the input. The password check runs twice: on the input
// with its password replaced by a marker that nothing else in a URL can equal (any
// occurrence is a leak, whatever the password's length), and on the input itself,
// where the password may appear in the error only as the part of the URL that equals
// it and may be printed (the host of "A0://:000000@000000" is "000000" too).
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"t", "/a/b", "file:///x", "file:/x", "s3://b/p?region=r", "s3:b", "gs://b", "azblob://c/p",
		"s3://u:pw-SECRET@b/p", "C:\\data\\t", "s3://", "::", "a://b@c", "file://h/x", "%zz://b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := storage.ParseLocation(s)
		if err != nil {
			if u, perr := url.Parse(s); perr == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok {
					const marker = "pwLEAKmarker7f3a"
					marked := *u
					marked.User = url.UserPassword(u.User.Username(), marker)
					if _, merr := storage.ParseLocation(marked.String()); merr != nil && strings.Contains(merr.Error(), marker) {
						t.Fatalf("error %q repeats the password of %q", merr, marked.String())
					}
					msg := err.Error()
					for _, part := range []string{u.Host, u.Path, u.RawPath, u.RawQuery, u.Fragment, u.Opaque, u.User.Username()} {
						if part != "" {
							msg = strings.ReplaceAll(msg, part, "")
						}
					}
					if len(pw) >= 6 && strings.Contains(msg, pw) {
						t.Fatalf("error %q repeats the password", err)
					}
				}
			}
			return
		}
		if loc.IsLocal() {
			if !filepath.IsAbs(loc.Dir) {
				t.Fatalf("local location %q has a relative Dir %q", s, loc.Dir)
			}
			return
		}
		if loc.URL.User != nil || loc.URL.Host == "" || loc.Scheme == "" || loc.Scheme == "file" {
			t.Fatalf("URL location %q parsed to %+v", s, loc.URL)
		}
	})
}

func TestFileLocation(t *testing.T) {
	for _, tc := range []struct {
		name, table, rel, want string
	}{
		{"local path", "/data/orders", "country=JP/part-0.parquet", "/data/orders/country=JP/part-0.parquet"},
		{"local path, trailing slash", "/data/orders/", "part-0.parquet", "/data/orders/part-0.parquet"},
		{"file URL", "file:///data/orders", "part-0.parquet", "/data/orders/part-0.parquet"},
		{"s3 with prefix", "s3://bucket/warehouse/orders", "country=JP/part-0.parquet", "s3://bucket/warehouse/orders/country=JP/part-0.parquet"},
		{"s3 bucket root", "s3://bucket", "part-0.parquet", "s3://bucket/part-0.parquet"},
		{"query dropped", "s3://bucket/orders?region=eu-west-1&endpoint=http://localhost:7070", "part-0.parquet", "s3://bucket/orders/part-0.parquet"},
		{"key kept unescaped", "gs://bucket/orders/", "d=2026-01-01 00%3A00/p.parquet", "gs://bucket/orders/d=2026-01-01 00%3A00/p.parquet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := storage.FileLocation(tc.table, tc.rel)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
