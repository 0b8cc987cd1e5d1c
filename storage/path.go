package storage

import (
	"fmt"
	"strings"
)

// ValidatePath reports whether p is an acceptable object path: a clean, relative,
// '/'-separated path that names something strictly inside a store's root. It returns nil
// or an error wrapping ErrInvalidPath that names the path and the reason.
//
// Rejected (invariant "Confinement" in doc.go):
//   - the empty path;
//   - absolute paths (a leading '/');
//   - empty elements ("a//b", a trailing '/');
//   - "." and ".." elements;
//   - backslashes and NUL bytes anywhere;
//   - a Windows drive prefix: a first element that starts with an ASCII letter and ':'
//     ("C:", "c:foo").
//
// Everything else is a name, taken literally. Spaces, '%', ':', '+', '=' and non-ASCII
// characters are accepted because real Delta tables use them in partition directories
// ("part=2021-09-08 11%3A11%3A11", "x=A%2FA", "x=B%20B").
//
// Percent-encoding: this package never decodes anything. Delta stores file paths in the
// log as percent-encoded URIs; callers must percent-decode them first and pass the decoded
// result here, which is what gets validated and used. An element that still contains
// "%2e%2e" or "%2F" after decoding is an ordinary name made of those literal characters
// (Spark writes such directory names on disk), so it cannot escape the root and is
// accepted. Validating the encoded form instead would let "%2e%2e" pass here and turn into
// ".." later, which is why decoding must come first.
func ValidatePath(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty path", ErrInvalidPath)
	}
	if reason := checkPath(p); reason != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidPath, p, reason)
	}
	return nil
}

// ValidatePrefix reports whether prefix is an acceptable List prefix. A prefix is the
// empty string (everything), a directory ending in '/' ("_delta_log/"), or a path whose
// last element is a partial name ("_delta_log/0000000000000000001"). Apart from the
// trailing '/', the same rules as ValidatePath apply to every element, including the
// partial last one: a prefix ending in "." or ".." is rejected even though it would only
// be used as a filter, so that no implementation ever has to reason about it.
// It returns nil or an error wrapping ErrInvalidPath.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return fmt.Errorf("%w: prefix %q is absolute", ErrInvalidPath, prefix)
	}
	if reason := checkPath(p); reason != "" {
		return fmt.Errorf("%w: prefix %q: %s", ErrInvalidPath, prefix, reason)
	}
	return nil
}

// checkPath returns why the non-empty path p is invalid, or "" when it is valid.
func checkPath(p string) string {
	if strings.IndexByte(p, 0) >= 0 {
		return "contains a NUL byte"
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return "contains a backslash"
	}
	if p[0] == '/' {
		return "is absolute"
	}
	if len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0]) {
		return "starts with a drive letter"
	}
	for i := 0; ; {
		j := strings.IndexByte(p[i:], '/')
		elem := p[i:]
		if j >= 0 {
			elem = p[i : i+j]
		}
		switch elem {
		case "":
			return fmt.Sprintf("empty element at byte %d", i)
		case ".", "..":
			return fmt.Sprintf("%q element at byte %d", elem, i)
		}
		if j < 0 {
			return ""
		}
		i += j + 1
	}
}

func isASCIILetter(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
