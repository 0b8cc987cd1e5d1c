package log

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseDDL parses a schema written as SQL column definitions, the form Spark's
// StructType.fromDDL accepts:
//
//	id bigint NOT NULL, ts timestamp, amount decimal(10,2),
//	tags array<string>, attrs map<string,int>, point struct<x:double, y:double>
//
// Each column is a name (an identifier, or any text in back-quotes, with “ for a
// back-quote) and a type, optionally followed by NOT NULL. Types and keywords are
// case-insensitive: boolean; tinyint or byte; smallint or short; int or integer;
// bigint or long; float or real; double; string (also varchar(n) and char(n));
// binary; date; timestamp (timestamp_ltz); timestamp_ntz; decimal(p,s) (also
// dec and numeric; decimal alone is decimal(10,0)); array<T>; map<K,V>;
// struct<name: T [NOT NULL], ...>. A colon between name and type is optional.
// Errors wrap ErrInvalidSchema and give the byte offset.
func ParseDDL(s string) (*StructType, error) {
	p := &ddlParser{s: s}
	if !utf8.ValidString(s) {
		return nil, p.errorf("not valid UTF-8")
	}
	st := &StructType{}
	seen := map[string]bool{}
	for {
		f, err := p.field()
		if err != nil {
			return nil, err
		}
		if seen[strings.ToLower(f.Name)] {
			return nil, p.errorf("duplicate column %q", f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		st.Fields = append(st.Fields, f)
		p.space()
		if p.eof() {
			return st, nil
		}
		if !p.consume(',') {
			return nil, p.errorf("want ',' or the end after column %q", f.Name)
		}
	}
}

type ddlParser struct {
	s   string
	pos int
}

func (p *ddlParser) errorf(format string, args ...any) error {
	return fmt.Errorf("log: schema DDL at byte %d: %w: %s", p.pos, ErrInvalidSchema, fmt.Sprintf(format, args...))
}

func (p *ddlParser) eof() bool { return p.pos >= len(p.s) }

func (p *ddlParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n' || p.s[p.pos] == '\r') {
		p.pos++
	}
}

func (p *ddlParser) consume(c byte) bool {
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// word reads an identifier (letters, digits, '_'), or "" when there is none.
func (p *ddlParser) word() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) {
		c := rune(p.s[p.pos])
		if c == '_' || c < 0x80 && (unicode.IsLetter(c) || unicode.IsDigit(c)) {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

// name reads a column name: an identifier or a back-quoted name.
func (p *ddlParser) name() (string, error) {
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == '`' {
		var b strings.Builder
		p.pos++
		for {
			i := strings.IndexByte(p.s[p.pos:], '`')
			if i < 0 {
				return "", p.errorf("unterminated back-quoted name")
			}
			b.WriteString(p.s[p.pos : p.pos+i])
			p.pos += i + 1
			if p.pos < len(p.s) && p.s[p.pos] == '`' {
				b.WriteByte('`')
				p.pos++
				continue
			}
			if b.Len() == 0 {
				return "", p.errorf("empty column name")
			}
			return b.String(), nil
		}
	}
	w := p.word()
	if w == "" {
		return "", p.errorf("want a column name")
	}
	return w, nil
}

func (p *ddlParser) field() (StructField, error) {
	name, err := p.name()
	if err != nil {
		return StructField{}, err
	}
	p.consume(':')
	t, err := p.dataType()
	if err != nil {
		return StructField{}, err
	}
	f := StructField{Name: name, Type: t, Nullable: true, Metadata: map[string]any{}}
	save := p.pos
	if strings.EqualFold(p.word(), "not") {
		if !strings.EqualFold(p.word(), "null") {
			return StructField{}, p.errorf("want NULL after NOT")
		}
		f.Nullable = false
	} else {
		p.pos = save
	}
	return f, nil
}

// ddlPrimitives maps DDL type names to Delta primitive names.
var ddlPrimitives = map[string]string{
	"boolean": "boolean", "bool": "boolean",
	"tinyint": "byte", "byte": "byte",
	"smallint": "short", "short": "short",
	"int": "integer", "integer": "integer",
	"bigint": "long", "long": "long",
	"float": "float", "real": "float",
	"double": "double",
	"string": "string", "varchar": "string", "char": "string",
	"binary":    "binary",
	"date":      "date",
	"timestamp": "timestamp", "timestamp_ltz": "timestamp",
	"timestamp_ntz": "timestamp_ntz",
}

func (p *ddlParser) dataType() (DataType, error) {
	start := p.pos
	w := strings.ToLower(p.word())
	switch w {
	case "":
		return nil, p.errorf("want a type")
	case "array":
		if !p.consume('<') {
			return nil, p.errorf("want '<' after array")
		}
		et, err := p.dataType()
		if err != nil {
			return nil, err
		}
		if !p.consume('>') {
			return nil, p.errorf("want '>' to close array<")
		}
		return &ArrayType{ElementType: et, ContainsNull: true}, nil
	case "map":
		if !p.consume('<') {
			return nil, p.errorf("want '<' after map")
		}
		kt, err := p.dataType()
		if err != nil {
			return nil, err
		}
		if !p.consume(',') {
			return nil, p.errorf("want ',' between map key and value types")
		}
		vt, err := p.dataType()
		if err != nil {
			return nil, err
		}
		if !p.consume('>') {
			return nil, p.errorf("want '>' to close map<")
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: true}, nil
	case "struct":
		if !p.consume('<') {
			return nil, p.errorf("want '<' after struct")
		}
		st := &StructType{}
		seen := map[string]bool{}
		if p.consume('>') {
			return nil, p.errorf("a struct needs at least one field")
		}
		for {
			f, err := p.field()
			if err != nil {
				return nil, err
			}
			if seen[strings.ToLower(f.Name)] {
				return nil, p.errorf("duplicate struct field %q", f.Name)
			}
			seen[strings.ToLower(f.Name)] = true
			st.Fields = append(st.Fields, f)
			if p.consume('>') {
				return st, nil
			}
			if !p.consume(',') {
				return nil, p.errorf("want ',' or '>' in struct<")
			}
		}
	case "decimal", "dec", "numeric":
		if !p.consume('(') {
			return &DecimalType{Precision: 10, Scale: 0}, nil
		}
		prec, err := p.number()
		if err != nil {
			return nil, err
		}
		scale := 0
		if p.consume(',') {
			if scale, err = p.number(); err != nil {
				return nil, err
			}
		}
		if !p.consume(')') {
			return nil, p.errorf("want ')' to close decimal(")
		}
		if prec < 1 || prec > 38 || scale < 0 || scale > prec {
			p.pos = start
			return nil, p.errorf("invalid decimal(%d,%d): want 1 <= precision <= 38 and 0 <= scale <= precision", prec, scale)
		}
		return &DecimalType{Precision: prec, Scale: scale}, nil
	}
	name, ok := ddlPrimitives[w]
	if !ok {
		p.pos = start
		return nil, p.errorf("unknown type %q", w)
	}
	if w == "varchar" || w == "char" {
		if p.consume('(') {
			if _, err := p.number(); err != nil {
				return nil, err
			}
			if !p.consume(')') {
				return nil, p.errorf("want ')' to close %s(", w)
			}
		}
	}
	return &PrimitiveType{Name: name}, nil
}

func (p *ddlParser) number() (int, error) {
	w := p.word()
	n, err := strconv.Atoi(w)
	if err != nil {
		return 0, p.errorf("want a number, found %q", w)
	}
	return n, nil
}
