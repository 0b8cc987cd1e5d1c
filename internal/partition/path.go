package partition

import (
	"fmt"
	"strings"
)

// DefaultPartitionName is the directory value of a NULL partition value.
const DefaultPartitionName = "__HIVE_DEFAULT_PARTITION__"

// escapeSet marks the ASCII characters Spark's escapePathName writes as %XX: the
// control characters 0x01-0x1F, DEL, and "#%'*/:=?\{[]^ (the set Hive and Spark share).
// NUL is included as well (it cannot occur in a path either way).
var escapeSet = func() (set [128]bool) {
	for c := 0; c < 0x20; c++ {
		set[c] = true
	}
	for _, c := range "\"#%'*/:=?\\\x7f{[]^" {
		set[c] = true
	}
	return set
}()

// EscapePathName escapes s for use in a partition directory name as Spark does: each
// byte in the escape set becomes %XX (uppercase hex); everything else, including
// non-ASCII UTF-8, is kept.
func EscapePathName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 128 && escapeSet[c] {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// UnescapePathName undoes EscapePathName: each %XX with two hex digits becomes that byte;
// a '%' not followed by two hex digits is kept (as Spark's unescapePathName does).
func UnescapePathName(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// DirName builds the partition directory "c1=v1/c2=v2" from column names and values
// already serialized with Format. A value is NULL when nulls[i] is true or it is empty,
// and is then written as DefaultPartitionName. Names and values are escaped with
// EscapePathName, except that a non-NULL value spelled exactly DefaultPartitionName
// (a string column holding that text) is written with its first byte as %5F
// (escapeValue), so that it gets a directory of its own (invariant P4): DirName is
// injective on (values, nulls) up to P2, and writers may key a partition's files by it.
func DirName(cols []string, values []string, nulls []bool) (string, error) {
	if len(cols) != len(values) || (nulls != nil && len(nulls) != len(cols)) {
		return "", fmt.Errorf("%w: %d columns, %d values, %d null flags", ErrInvalidValue, len(cols), len(values), len(nulls))
	}
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(EscapePathName(c))
		b.WriteByte('=')
		if (nulls != nil && nulls[i]) || values[i] == "" {
			b.WriteString(DefaultPartitionName)
			continue
		}
		b.WriteString(escapeValue(values[i]))
	}
	return b.String(), nil
}

// escapeValue is EscapePathName for a non-NULL partition value. The string
// DefaultPartitionName itself is written "%5F_HIVE_DEFAULT_PARTITION__": EscapePathName
// leaves '_' alone, so without this the string and NULL would share a directory (and a
// writer keyed by directory would put both into one file with one partition value).
// UnescapePathName, as Spark's unescapePathName, reads it back as the string; the log's
// partitionValues stay the only source of the value either way.
func escapeValue(v string) string {
	if v == DefaultPartitionName {
		return "%5F" + v[1:]
	}
	return EscapePathName(v)
}

// keepInPath reports the bytes RFC 3986 allows unencoded in a path: unreserved
// (ALPHA DIGIT - . _ ~), sub-delims (! $ & ' ( ) * + , ; =), ':' '@' and '/'.
func keepInPath(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

// EncodeLogPath percent-encodes a relative file path for add.path (RFC 3986 path rules,
// uppercase hex). '%' from EscapePathName is encoded again as %25: the log of a file in
// directory "t=2021-09-08 11%3A11%3A11" says "t=2021-09-08%2011%253A11%253A11". Non-ASCII
// bytes are encoded too (Spark leaves them raw; readers decode both the same).
func EncodeLogPath(rel string) string {
	var b strings.Builder
	for i := 0; i < len(rel); i++ {
		c := rel[i]
		if keepInPath(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// DecodeLogPath decodes add.path into the relative file path: every %XX becomes its byte.
// A '%' not followed by two hex digits is an error naming its position.
func DecodeLogPath(p string) (string, error) {
	if !strings.Contains(p, "%") {
		return p, nil
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return "", fmt.Errorf("%w: bad percent escape at byte %d of %q", ErrInvalidValue, i, p)
		}
		b.WriteByte(unhex(p[i+1])<<4 | unhex(p[i+2]))
		i += 2
	}
	return b.String(), nil
}
