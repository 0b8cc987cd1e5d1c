package stats

import (
	"fmt"
	"strings"
)

// Defaults and special values of Config.NumIndexedCols / StringPrefixLength.
const (
	// DefaultNumIndexedCols is the number of leaf columns that get statistics when
	// nothing else is configured (Delta's default).
	DefaultNumIndexedCols = 32
	// DefaultStringPrefixLength is the number of code points kept of string bounds
	// (Delta's default).
	DefaultStringPrefixLength = 32
	// IndexAllColumns as Config.NumIndexedCols collects statistics on every leaf
	// column (the property value -1).
	IndexAllColumns = -1
	// IndexNoColumns as Config.NumIndexedCols collects no column statistics, only
	// numRecords (the property value 0). It exists because the zero value of the field
	// means "default".
	IndexNoColumns = -2
	// NoStringBounds as Config.StringPrefixLength writes no minimum or maximum for
	// string columns (the property delta.dataSkippingStringPrefixLength=0, which
	// makes Spark write none); null counts are still written.
	NoStringBounds = -1
)

// Config selects which columns get statistics and how strings are cut. The zero
// value is Delta's default: the first 32 leaf columns, string prefix 32.
type Config struct {
	// NumIndexedCols is how many leaf columns, in schema order and not counting
	// partition columns, get statistics: > 0 that many; 0 the default
	// (DefaultNumIndexedCols = 32); IndexAllColumns (-1) every leaf; IndexNoColumns
	// (-2) none. Ignored when StatsColumns is non-empty. Lists and maps count as one
	// leaf each; structs are not counted, their fields are.
	NumIndexedCols int
	// StatsColumns, when non-empty, names exactly the columns that get statistics and
	// takes precedence over NumIndexedCols. Each entry is one column reference as in
	// delta.dataSkippingStatsColumns: dot-separated path, matched case-insensitively,
	// parts optionally quoted with backticks (a doubled backtick inside quotes is a
	// literal backtick). A struct selects all its leaves. Names are those of the
	// schema given to NewCollector (physical names when column mapping is on: the
	// caller translates logical names).
	StatsColumns []string
	// StringPrefixLength is how many code points of a string bound are kept: > 0
	// that many; 0 the default (DefaultStringPrefixLength = 32); NoStringBounds (-1)
	// none at all.
	StringPrefixLength int
	// AlwaysColumns are column paths (names of the schema given to NewCollector,
	// matched case-insensitively; a struct selects its leaves) that get statistics
	// whatever NumIndexedCols and StatsColumns select: a clustered table's clustering
	// columns, which PROTOCOL.md ("Clustered Table") requires statistics for. Paths
	// the schema does not have are ignored.
	AlwaysColumns [][]string
}

// Validate reports every problem of c at once, wrapped in ErrInvalidConfig.
func (c Config) Validate() error {
	var probs []string
	if c.NumIndexedCols < IndexNoColumns {
		probs = append(probs, fmt.Sprintf("NumIndexedCols %d is below %d", c.NumIndexedCols, IndexNoColumns))
	}
	if c.StringPrefixLength < NoStringBounds {
		probs = append(probs, fmt.Sprintf("StringPrefixLength %d is below %d", c.StringPrefixLength, NoStringBounds))
	}
	for i, s := range c.StatsColumns {
		if _, err := ParseColumnPath(s); err != nil {
			probs = append(probs, fmt.Sprintf("StatsColumns[%d]: %v", i, err))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(probs, "; "))
	}
	return nil
}

// prefixLen returns the prefix length in code points (0: no string bounds).
func (c Config) prefixLen() int {
	if c.StringPrefixLength == NoStringBounds {
		return 0
	}
	if c.StringPrefixLength <= 0 {
		return DefaultStringPrefixLength
	}
	return c.StringPrefixLength
}

// numIndexed returns the number of leaves to index, or -1 for all.
func (c Config) numIndexed() int {
	switch {
	case c.NumIndexedCols == 0:
		return DefaultNumIndexedCols
	case c.NumIndexedCols == IndexNoColumns:
		return 0
	case c.NumIndexedCols < 0:
		return -1
	}
	return c.NumIndexedCols
}

// SplitColumnList splits a delta.dataSkippingStatsColumns value into its column
// references: commas separate entries except inside backtick quotes; whitespace
// around entries is dropped. Each entry is checked with ParseColumnPath. A blank
// value gives no entries.
func SplitColumnList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	inQuote := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '`':
			inQuote = !inQuote // a doubled backtick toggles twice: stays inside
		case ',':
			if !inQuote {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated backtick quote")
	}
	out = append(out, strings.TrimSpace(s[start:]))
	for i, e := range out {
		if _, err := ParseColumnPath(e); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
	}
	return out, nil
}

// ParseColumnPath parses one column reference ("a.b", "`a.b`.c", "`x“y`") into
// its path parts. Unquoted parts are trimmed of surrounding spaces; empty parts are
// an error.
func ParseColumnPath(s string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted := false // current part was quoted
	i := 0
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty column name")
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '`':
			if cur.Len() > 0 && !quoted && strings.TrimSpace(cur.String()) != "" {
				return nil, fmt.Errorf("column %q: backtick inside an unquoted name at byte %d", s, i)
			}
			cur.Reset()
			i++
			closed := false
			for i < len(s) {
				if s[i] == '`' {
					if i+1 < len(s) && s[i+1] == '`' {
						cur.WriteByte('`')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				cur.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, fmt.Errorf("column %q: unterminated backtick quote", s)
			}
			quoted = true
			for i < len(s) && s[i] == ' ' {
				i++
			}
			if i < len(s) && s[i] != '.' {
				return nil, fmt.Errorf("column %q: expected '.' after quoted name at byte %d", s, i)
			}
		case c == '.':
			p := cur.String()
			if !quoted {
				p = strings.TrimSpace(p)
			}
			if p == "" {
				return nil, fmt.Errorf("column %q: empty name part at byte %d", s, i)
			}
			parts = append(parts, p)
			cur.Reset()
			quoted = false
			i++
		default:
			cur.WriteByte(c)
			i++
		}
	}
	p := cur.String()
	if !quoted {
		p = strings.TrimSpace(p)
	}
	if p == "" {
		return nil, fmt.Errorf("column %q: empty name part at end", s)
	}
	return append(parts, p), nil
}
