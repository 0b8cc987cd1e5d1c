package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrUnknownScheme reports a table location whose URL scheme no backend is registered
// for. The message names the scheme and, for the schemes of this module's own backends,
// the package whose blank import registers it.
var ErrUnknownScheme = errors.New("storage: unknown location scheme")

// Opener opens the store a location URL names. create says whether the caller is about
// to create a table there (Local creates a missing directory then; object stores have
// no directories and ignore it). The URL is the caller's, parsed; an Opener must not
// keep or print credentials found in it (there should be none: see OpenURL).
type Opener func(ctx context.Context, u *url.URL, create bool) (Storage, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Opener{}
)

// knownBackends names, for schemes served by this module's backend packages, the
// package to import, so that a missing blank import gets a helpful error.
var knownBackends = map[string]string{
	"s3":     "github.com/skiplake/skiplake/storage/s3",
	"s3a":    "github.com/skiplake/skiplake/storage/s3",
	"gs":     "github.com/skiplake/skiplake/storage/gcs",
	"azblob": "github.com/skiplake/skiplake/storage/azure",
}

// Register makes a backend available for locations with the given URL scheme
// (lower case, without "://"). Backend packages call it from init, as database/sql
// drivers do, so a program compiles only the backends it imports:
//
//	import _ "github.com/skiplake/skiplake/storage/s3"
//
// Register panics if the scheme is empty, is "file" (served by Local) or is already
// registered: both are programming errors found at start-up.
func Register(scheme string, open Opener) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || scheme == "file" || open == nil {
		panic(fmt.Sprintf("storage: Register(%q): invalid scheme or nil opener", scheme))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[scheme]; dup {
		panic(fmt.Sprintf("storage: Register(%q) called twice", scheme))
	}
	registry[scheme] = open
}

// Schemes returns the registered URL schemes in sorted order ("file" and plain paths
// are always available and not listed).
func Schemes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for s := range registry {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Location is a parsed table location: a local directory or an object-store URL.
type Location struct {
	// Scheme is "file" for local directories, else the URL scheme in lower case.
	Scheme string
	// Dir is the local directory (Scheme "file"), cleaned and absolute.
	Dir string
	// URL is the parsed URL of an object-store location (nil for local directories).
	URL *url.URL
}

// String returns the location for messages: the directory, or the URL redacted by
// RedactURL (no user information, no values of parameters off the allow-list).
func (l Location) String() string {
	if l.URL == nil {
		return l.Dir
	}
	return RedactURL(l.URL)
}

// IsLocal reports whether the location is a local directory.
func (l Location) IsLocal() bool { return l.URL == nil }

// ParseLocation parses a table location:
//
//   - a plain path ("t", "/data/t", "./t", "C:\data\t"): a local directory;
//   - "file:///abs/path" or "file://localhost/abs/path" (or "file:/abs/path"): a
//     local directory, percent-decoded;
//   - "SCHEME://..." for any other scheme, e.g. "s3://bucket/prefix?region=eu-west-1",
//     "gs://bucket/prefix", "azblob://container/prefix": an object-store location,
//     served by the backend registered for SCHEME (see Register). An unregistered
//     scheme is an error wrapping ErrUnknownScheme, never a local directory named
//     "s3:".
//
// A string that starts with a scheme of this module's backends followed by ':' but not
// "//" ("s3:bucket/t") is rejected too, since it is almost certainly a mistyped URL.
func ParseLocation(s string) (Location, error) {
	if s == "" {
		return Location{}, fmt.Errorf("storage: empty table location")
	}
	scheme, isURL := splitScheme(s)
	if !isURL {
		if scheme != "" && knownBackends[scheme] != "" {
			return Location{}, fmt.Errorf("%w: %q looks like a %s URL without \"//\" (write %s://bucket/path)", ErrUnknownScheme, RedactLocation(s), scheme, scheme)
		}
		abs, err := filepath.Abs(s)
		if err != nil {
			return Location{}, fmt.Errorf("storage: table location %q: %w", s, err)
		}
		return Location{Scheme: "file", Dir: abs}, nil
	}
	if scheme == "file" {
		u, err := url.Parse(s)
		if err != nil {
			return Location{}, fmt.Errorf("storage: table location %q is not a valid file URL", RedactLocation(s))
		}
		if u.User != nil {
			return Location{}, fmt.Errorf("%w: table location %q%s", ErrCredentialsInURL, RedactURL(u), useCredentialChain)
		}
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("storage: table location %q: file URLs name a local path (file:///path), not host %q", RedactURL(u), u.Host)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return Location{}, fmt.Errorf("storage: table location %q: file URLs take no query or fragment", RedactURL(u))
		}
		if u.Path == "" {
			return Location{}, fmt.Errorf("storage: table location %q: no path", RedactURL(u))
		}
		return Location{Scheme: "file", Dir: filepath.Clean(filepath.FromSlash(u.Path))}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error repeats the whole input; the input may carry user information.
		return Location{}, fmt.Errorf("storage: table location with scheme %q is not a valid URL", scheme)
	}
	u.Scheme = scheme
	if u.User != nil {
		return Location{}, fmt.Errorf("%w: table location %s%s", ErrCredentialsInURL, RedactURL(u), useCredentialChain)
	}
	if err := checkParams(u); err != nil {
		return Location{}, err
	}
	if u.Host == "" {
		return Location{}, fmt.Errorf("storage: table location %s: no bucket or container after %s://", RedactURL(u), scheme)
	}
	return Location{Scheme: scheme, URL: u}, nil
}

// splitScheme returns the lower-cased scheme of "scheme://rest". isURL is true only
// when "://" follows a valid scheme of two or more characters (a single letter is a
// Windows drive) or the scheme is "file:" followed by '/'; scheme is also returned for
// "scheme:rest" without the slashes.
func splitScheme(s string) (scheme string, isURL bool) {
	i := strings.IndexByte(s, ':')
	if i < 2 {
		return "", false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", false
		}
	}
	scheme = strings.ToLower(s[:i])
	rest := s[i+1:]
	if scheme == "file" && strings.HasPrefix(rest, "/") {
		return scheme, true // file:/abs and file:///abs
	}
	return scheme, strings.HasPrefix(rest, "//")
}

// useCredentialChain ends the message of ErrCredentialsInURL.
const useCredentialChain = "; use the provider's standard credential chain (environment, profile, workload identity)"

// OpenURL opens the store of an existing table location (see ParseLocation). A local
// directory must exist. Object-store backends take their credentials from the
// provider's standard chain (environment variables, shared profile, workload identity);
// URLs with user information (also in a parameter such as endpoint=) are refused, and
// errors print locations redacted (RedactURL).
func OpenURL(ctx context.Context, location string) (Storage, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	return OpenLocation(ctx, loc, false)
}

// CreateURL is OpenURL for a table about to be created: a missing local directory is
// created (with its parents); object stores behave as in OpenURL.
func CreateURL(ctx context.Context, location string) (Storage, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	return OpenLocation(ctx, loc, true)
}

// OpenLocation opens the store of a parsed location; create is as in CreateURL.
func OpenLocation(ctx context.Context, loc Location, create bool) (Storage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", loc, err)
	}
	if loc.IsLocal() {
		if create {
			if err := os.MkdirAll(loc.Dir, dirPerm); err != nil {
				return nil, fmt.Errorf("storage: create %s: %w", loc.Dir, err)
			}
		}
		return NewLocal(loc.Dir)
	}
	registryMu.RLock()
	open := registry[loc.Scheme]
	registryMu.RUnlock()
	if open == nil {
		if pkg := knownBackends[loc.Scheme]; pkg != "" {
			return nil, fmt.Errorf("%w %q in %s: the program does not include that backend (import _ %q)", ErrUnknownScheme, loc.Scheme, loc, pkg)
		}
		return nil, fmt.Errorf("%w %q in %s (registered: file%s)", ErrUnknownScheme, loc.Scheme, loc, schemeList())
	}
	u := *loc.URL
	return open(ctx, &u, create)
}

func schemeList() string {
	var b strings.Builder
	for _, s := range Schemes() {
		b.WriteString(", ")
		b.WriteString(s)
	}
	return b.String()
}

// FileLocation is the absolute location of a data file the log names relative to
// the table (table.PlannedFile.Path): a local path under a local table, else the table's
// URL (without its query) followed by the file's key as stored, unescaped, as aws s3,
// gsutil and DuckDB take it.
func FileLocation(tableLocation, rel string) (string, error) {
	loc, err := ParseLocation(tableLocation)
	if err != nil {
		return "", err
	}
	if loc.IsLocal() {
		return filepath.Join(loc.Dir, filepath.FromSlash(rel)), nil
	}
	prefix := strings.Trim(loc.URL.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return loc.Scheme + "://" + loc.URL.Host + "/" + prefix + rel, nil
}
