package log

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skiplake/skiplake/stats"
)

// ddlTypes maps the SQL type names Spark's DDL accepts (lower case) to Delta's.
var ddlTypes = map[string]string{
	"string": TypeString, "varchar": TypeString, "char": TypeString,
	"bigint": TypeLong, "long": TypeLong,
	"int": TypeInteger, "integer": TypeInteger,
	"smallint": TypeShort, "short": TypeShort,
	"tinyint": TypeByte, "byte": TypeByte,
	"float": TypeFloat, "real": TypeFloat,
	"double":  TypeDouble,
	"boolean": TypeBoolean, "bool": TypeBoolean,
	"binary":    TypeBinary,
	"date":      TypeDate,
	"timestamp": TypeTimestamp, "timestamp_ltz": TypeTimestamp,
	"timestamp_ntz": TypeTimestampNTZ,
}

// ParseDDLType parses a column type written as in Spark SQL DDL, in any letter
// case: string (varchar(n), char(n)), bigint/long, int/integer, smallint/short,
// tinyint/byte, float/real, double, boolean, binary, date, timestamp
// (timestamp_ltz), timestamp_ntz, decimal[(p[,s])] (dec, numeric; default
// decimal(10,0)), array<T>, map<K,V> and struct<name: T, ...> (the colon is
// optional). Nested fields and elements are nullable.
func ParseDDLType(s string) (DataType, error) {
	p := &ddlParser{s: s}
	t, err := p.typ()
	if err == nil {
		p.space()
		if p.i < len(p.s) {
			err = p.errorf("unexpected %q after the type", p.s[p.i:])
		}
	}
	if err != nil {
		return nil, fmt.Errorf("log: type %q: %w", s, err)
	}
	return t, nil
}

// ParseColumnDefinition parses "name type" as ADD COLUMNS takes it: the name may
// be a dotted path into struct columns ("address.zip int"), parts quoted with
// backticks when they hold spaces, dots or backticks ("`my col` string"); the type
// is ParseDDLType's. A trailing NOT NULL is refused: the table's existing rows have
// no value for a new column (Delta refuses such a column too).
func ParseColumnDefinition(s string) (NewColumn, error) {
	c, notNull, err := parseColumnDefinition(s)
	if err != nil {
		return NewColumn{}, err
	}
	if notNull {
		return NewColumn{}, fmt.Errorf("log: column definition %q: NOT NULL cannot be added to an existing table (its rows have no value for the new column)", s)
	}
	return c, nil
}

// parseColumnDefinition parses "name type [NOT NULL]" (NOT NULL in any letter case and
// spacing) and reports whether NOT NULL was given.
func parseColumnDefinition(s string) (NewColumn, bool, error) {
	def, notNull := cutNotNull(s)
	c, err := parseNameAndType(def)
	if err != nil {
		return NewColumn{}, false, fmt.Errorf("log: column definition %q: %w", s, err)
	}
	return c, notNull, nil
}

// cutNotNull removes a trailing "NOT NULL" (any case, any white space between and
// before the words) from a column definition.
func cutNotNull(s string) (string, bool) {
	t := strings.TrimRightFunc(s, unicode.IsSpace)
	const null, not = "null", "not"
	if len(t) < len(null) || !strings.EqualFold(t[len(t)-len(null):], null) {
		return s, false
	}
	u := t[:len(t)-len(null)]
	v := strings.TrimRightFunc(u, unicode.IsSpace)
	if len(v) == len(u) || len(v) < len(not) || !strings.EqualFold(v[len(v)-len(not):], not) {
		return s, false
	}
	w := v[:len(v)-len(not)]
	if x := strings.TrimRightFunc(w, unicode.IsSpace); len(x) == len(w) {
		return s, false // "...xnot null": NOT is not a separate word
	}
	return w, true
}

// parseNameAndType parses "name type" (the errors are wrapped by the caller).
func parseNameAndType(s string) (NewColumn, error) {
	name, rest, err := splitColumnName(s)
	if err != nil {
		return NewColumn{}, err
	}
	path, err := stats.ParseColumnPath(name)
	if err != nil {
		return NewColumn{}, err
	}
	for _, part := range path {
		if err := checkFieldName(part); err != nil {
			return NewColumn{}, fmt.Errorf("log: column definition %q: %w", s, err)
		}
	}
	t, err := ParseDDLType(rest)
	if err != nil {
		return NewColumn{}, err
	}
	return NewColumn{Path: path, Type: t}, nil
}

// ParseDDLSchema parses a comma-separated list of top-level column definitions
// ("id bigint NOT NULL, ts timestamp, tags array<string>") into a schema. A column is
// nullable unless its definition ends with NOT NULL (Spark's DDL; the field's
// "nullable": false in the Delta schema, which every write then enforces). Fields
// nested in structs, arrays and maps are nullable.
func ParseDDLSchema(s string) (*StructType, error) {
	st := &StructType{}
	seen := map[string]bool{}
	for _, def := range splitTopLevel(s, ',') {
		c, notNull, err := parseColumnDefinition(def)
		if err != nil {
			return nil, err
		}
		if len(c.Path) != 1 {
			return nil, fmt.Errorf("log: schema %q: column %q: a schema names top-level columns only", s, strings.Join(c.Path, "."))
		}
		if k := strings.ToLower(c.Path[0]); seen[k] {
			return nil, fmt.Errorf("log: schema %q: column %q given twice (names are case-insensitive)", s, c.Path[0])
		} else {
			seen[k] = true
		}
		st.Fields = append(st.Fields, StructField{Name: c.Path[0], Type: c.Type, Nullable: !notNull, Metadata: map[string]any{}})
	}
	if len(st.Fields) == 0 {
		return nil, fmt.Errorf("log: schema %q: no columns", s)
	}
	return st, nil
}

// checkFieldName refuses a field name that is not valid UTF-8: the schema is stored as
// JSON text, where each invalid byte would silently become U+FFFD — another name.
func checkFieldName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("field name %q is not valid UTF-8: %w", name, ErrInvalidSchema)
	}
	return nil
}

// splitColumnName splits "name rest" at the first white space outside backticks.
func splitColumnName(s string) (string, string, error) {
	s = strings.TrimSpace(s)
	quoted := false
	for i, r := range s {
		switch {
		case r == '`':
			quoted = !quoted
		case !quoted && unicode.IsSpace(r):
			return s[:i], strings.TrimSpace(s[i:]), nil
		}
	}
	if quoted {
		return "", "", fmt.Errorf("unterminated backtick quote")
	}
	return "", "", fmt.Errorf("want \"name type\"")
}

// splitTopLevel splits s at sep outside <...>, (...) and backticks.
func splitTopLevel(s string, sep byte) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '`':
			quoted = !quoted
		case quoted:
		case c == '<' || c == '(':
			depth++
		case c == '>' || c == ')':
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

type ddlParser struct {
	s string
	i int
}

func (p *ddlParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *ddlParser) space() {
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if !unicode.IsSpace(r) {
			return
		}
		p.i += n
	}
}

// ident reads an identifier (letters, digits, underscores).
func (p *ddlParser) ident() string {
	start := p.i
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			break
		}
		p.i += n
	}
	return p.s[start:p.i]
}

// word reads an identifier, lower-cased.
func (p *ddlParser) word() string {
	p.space()
	return strings.ToLower(p.ident())
}

func (p *ddlParser) accept(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *ddlParser) expect(c byte) error {
	if !p.accept(c) {
		return p.errorf("expected %q", c)
	}
	return nil
}

func (p *ddlParser) int() (int, error) {
	p.space()
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	n, err := strconv.Atoi(p.s[start:p.i])
	if err != nil {
		return 0, p.errorf("expected a number")
	}
	return n, nil
}

func (p *ddlParser) typ() (DataType, error) {
	w := p.word()
	if w == "" {
		return nil, p.errorf("expected a type name")
	}
	if name, ok := ddlTypes[w]; ok {
		if (w == "varchar" || w == "char") && p.accept('(') {
			if _, err := p.int(); err != nil {
				return nil, err
			}
			if err := p.expect(')'); err != nil {
				return nil, err
			}
		}
		return &PrimitiveType{Name: name}, nil
	}
	switch w {
	case "decimal", "dec", "numeric":
		prec, scale := 10, 0
		if p.accept('(') {
			var err error
			if prec, err = p.int(); err != nil {
				return nil, err
			}
			if p.accept(',') {
				if scale, err = p.int(); err != nil {
					return nil, err
				}
			}
			if err := p.expect(')'); err != nil {
				return nil, err
			}
		}
		if prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return nil, p.errorf("decimal(%d,%d): precision must be 1..38 and scale 0..precision", prec, scale)
		}
		return &DecimalType{Precision: prec, Scale: scale}, nil
	case "array":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		et, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: et, ContainsNull: true}, nil
	case "map":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		kt, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		vt, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: true}, nil
	case "struct":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		st := &StructType{}
		seen := map[string]bool{}
		for !p.accept('>') {
			if len(st.Fields) > 0 {
				if err := p.expect(','); err != nil {
					return nil, err
				}
			}
			name, err := p.fieldName()
			if err != nil {
				return nil, err
			}
			if seen[strings.ToLower(name)] {
				return nil, p.errorf("struct field %q given twice", name)
			}
			seen[strings.ToLower(name)] = true
			p.accept(':')
			ft, err := p.typ()
			if err != nil {
				return nil, err
			}
			if at := p.i; p.word() == "not" {
				p.i = at
				return nil, p.errorf("NOT NULL on struct field %q: only top-level columns take NOT NULL here", name)
			} else {
				p.i = at
			}
			st.Fields = append(st.Fields, StructField{Name: name, Type: ft, Nullable: true, Metadata: map[string]any{}})
		}
		if len(st.Fields) == 0 {
			return nil, p.errorf("a struct needs at least one field")
		}
		return st, nil
	}
	return nil, p.errorf("unknown type %q", w)
}

// fieldName reads a struct field name: an identifier or a backtick-quoted name.
func (p *ddlParser) fieldName() (string, error) {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '`' {
		var b strings.Builder
		for p.i++; p.i < len(p.s); p.i++ {
			if p.s[p.i] == '`' {
				if p.i+1 < len(p.s) && p.s[p.i+1] == '`' {
					b.WriteByte('`')
					p.i++
					continue
				}
				p.i++
				if err := checkFieldName(b.String()); err != nil {
					return "", fmt.Errorf("at byte %d: %w", p.i, err)
				}
				return b.String(), nil
			}
			b.WriteByte(p.s[p.i])
		}
		return "", p.errorf("unterminated backtick quote")
	}
	name := p.ident()
	if name == "" {
		return "", p.errorf("expected a field name")
	}
	return name, nil
}
