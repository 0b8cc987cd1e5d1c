package expr

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/skiplake/skiplake/value"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

// MaxScalarOperators bounds the operators (+ - * / % || and unary minus) of one scalar
// expression (ParseScalar, each value of ParseAssignments). A chain `v + 1 + 1 + ...`
// is a tree as deep as it is long, and binding, printing and evaluating it recurse
// that deep and evaluate one vector per operator; the bound keeps that small.
const MaxScalarOperators = 1000

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tQuoted // back-quoted identifier
	tString
	tNumber
	tOp // = <> != < <= > >= <=>
	tLParen
	tRParen
	tComma
	tDot
	tHexString // X'...'
	tArith     // + - * / % ||
)

type token struct {
	kind tokKind
	text string // identifier/string content (unescaped), operator, number text
	pos  int    // 1-based byte offset
	raw  string // source text for messages
}

func (t token) describe() string {
	if t.kind == tEOF {
		return "end of input"
	}
	r := t.raw
	if len(r) > 40 {
		r = r[:40] + "..."
	}
	return "'" + r + "'"
}

func (t token) isKeyword(kw string) bool { return t.kind == tIdent && strings.EqualFold(t.text, kw) }

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i++
		}
		if i >= len(src) {
			toks = append(toks, token{kind: tEOF, pos: i + 1})
			return toks, nil
		}
		start := i
		c := src[i]
		switch {
		case (c == 'x' || c == 'X') && i+1 < len(src) && src[i+1] == '\'':
			s, n, err := scanQuoted(src, i+1, '\'')
			if err != nil {
				return nil, err
			}
			i = n
			toks = append(toks, token{kind: tHexString, text: s, pos: start + 1, raw: src[start:i]})
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			for i < len(src) && (src[i] == '_' || (src[i] >= 'a' && src[i] <= 'z') || (src[i] >= 'A' && src[i] <= 'Z') || (src[i] >= '0' && src[i] <= '9')) {
				i++
			}
			toks = append(toks, token{kind: tIdent, text: src[start:i], pos: start + 1, raw: src[start:i]})
		case c == '`' || c == '"':
			// Back quotes (Spark) and double quotes (standard SQL) delimit names; a
			// string literal takes single quotes.
			s, n, err := scanQuoted(src, i, c)
			if err != nil {
				return nil, err
			}
			i = n
			toks = append(toks, token{kind: tQuoted, text: s, pos: start + 1, raw: src[start:i]})
		case c == '\'':
			s, n, err := scanQuoted(src, i, '\'')
			if err != nil {
				return nil, err
			}
			i = n
			toks = append(toks, token{kind: tString, text: s, pos: start + 1, raw: src[start:i]})
		case (c >= '0' && c <= '9') || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			// Numbers are unsigned: a sign is an operator token that the parser folds
			// into the literal (`-5`) or applies (`a - 5`, `-a`).
			i++
			for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '.') {
				i++
			}
			if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
				j := i + 1
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				if j < len(src) && src[j] >= '0' && src[j] <= '9' {
					for j < len(src) && src[j] >= '0' && src[j] <= '9' {
						j++
					}
					i = j
				}
			}
			toks = append(toks, token{kind: tNumber, text: src[start:i], pos: start + 1, raw: src[start:i]})
		case c == '(':
			i++
			toks = append(toks, token{kind: tLParen, text: "(", pos: start + 1, raw: "("})
		case c == ')':
			i++
			toks = append(toks, token{kind: tRParen, text: ")", pos: start + 1, raw: ")"})
		case c == ',':
			i++
			toks = append(toks, token{kind: tComma, text: ",", pos: start + 1, raw: ","})
		case c == '.':
			i++
			toks = append(toks, token{kind: tDot, text: ".", pos: start + 1, raw: "."})
		case c == '+' || c == '-' || c == '*' || c == '/' || c == '%':
			i++
			toks = append(toks, token{kind: tArith, text: string(c), pos: start + 1, raw: string(c)})
		case c == '|':
			if i+1 >= len(src) || src[i+1] != '|' {
				return nil, &ParseError{Pos: start + 1, Msg: "found '|'", Expected: []string{"'||'"}}
			}
			i += 2
			toks = append(toks, token{kind: tArith, text: "||", pos: start + 1, raw: "||"})
		case c == '=' || c == '<' || c == '>' || c == '!':
			op := ""
			for _, cand := range []string{"<=>", "<>", "<=", ">=", "!=", "==", "=", "<", ">"} {
				if strings.HasPrefix(src[i:], cand) {
					op = cand
					break
				}
			}
			if op == "" {
				return nil, &ParseError{Pos: start + 1, Msg: "found '!'", Expected: []string{"'!='"}}
			}
			i += len(op)
			toks = append(toks, token{kind: tOp, text: op, pos: start + 1, raw: op})
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, &ParseError{Pos: start + 1, Msg: "unexpected character " + quoteRune(r)}
		}
	}
}

func quoteRune(r rune) string {
	if r == utf8.RuneError {
		return "(invalid UTF-8)"
	}
	return "'" + string(r) + "'"
}

// scanQuoted scans a quoted run starting at src[i] == q, where a doubled quote
// stands for one. It returns the content and the index after the closing quote.
func scanQuoted(src string, i int, q byte) (string, int, error) {
	start := i
	i++
	var b strings.Builder
	for {
		j := strings.IndexByte(src[i:], q)
		if j < 0 {
			what := "string"
			if q != '\'' {
				what = "quoted name"
			}
			return "", 0, &ParseError{Pos: start + 1, Msg: "unterminated " + what}
		}
		b.WriteString(src[i : i+j])
		i += j + 1
		if i < len(src) && src[i] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i, nil
	}
}

type parser struct {
	toks  []token
	i     int
	depth int
	ops   int // operators of the scalar expression being parsed (MaxScalarOperators)
	// general is set by ParseSQL: predicate operands are scalar expressions, and a
	// scalar operand without a comparison is itself a (boolean) predicate.
	general bool
}

// Parse parses an SQL-style filter such as `a >= 10 AND s LIKE 'ab%'`.
//
// Grammar (keywords case-insensitive):
//
//	expr      := term (OR term)*
//	term      := factor (AND factor)*
//	factor    := NOT factor | '(' expr ')' | TRUE | FALSE | predicate
//	predicate := operand ( cmp operand | [NOT] BETWEEN operand AND operand
//	           | [NOT] IN '(' operand (',' operand)* ')' | IS [NOT] NULL
//	           | [NOT] LIKE 'pattern' )
//	cmp       := = | == | <> | != | < | <= | > | >= | <=>
//	operand   := column | literal
//	column    := name ('.' name)*      name := identifier | `back quoted`
//	literal   := [-]digits | [-]digits.digits | number with exponent | 'string'
//	           | DATE 'YYYY-MM-DD' | TIMESTAMP '...' | TIMESTAMP_NTZ '...'
//	           | DOUBLE 'NaN' | X'hex' | TRUE | FALSE | NULL
//
// Errors are *ParseError values with the position and what was expected.
func Parse(s string) (Expr, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errExpected(t, "AND", "OR", "end of input")
	}
	return e, nil
}

// MustParse is Parse for expressions known to be valid (tests, examples, constants).
// It panics on error; do not use it on user input.
func MustParse(s string) Expr {
	e, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return e
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errExpected(t token, expected ...string) error {
	return &ParseError{Pos: t.pos, Msg: "found " + t.describe(), Expected: expected}
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return &ParseError{Pos: p.peek().pos, Msg: "expression nested too deeply"}
	}
	return nil
}

// operator counts one operator of a scalar expression at token t.
func (p *parser) operator(t token) error {
	p.ops++
	if p.ops > MaxScalarOperators {
		return &ParseError{Pos: t.pos, Msg: fmt.Sprintf("expression too large: more than %d operators", MaxScalarOperators)}
	}
	return nil
}

func (p *parser) parseOr() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	first, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	terms := []Expr{first}
	for p.peek().isKeyword("OR") {
		p.next()
		t, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	return Or(terms...), nil
}

func (p *parser) parseAnd() (Expr, error) {
	first, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	terms := []Expr{first}
	for p.peek().isKeyword("AND") {
		p.next()
		t, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	return And(terms...), nil
}

func (p *parser) parseNot() (Expr, error) {
	if p.peek().isKeyword("NOT") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		p.next()
		t, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return Not(t), nil
	}
	t := p.peek()
	if t.kind == tLParen && !p.general {
		p.next()
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, p.errExpected(c, "')'")
		}
		return e, nil
	}
	if (t.isKeyword("TRUE") || t.isKeyword("FALSE")) && !p.tailAt(1) {
		p.next()
		return Constant(t.isKeyword("TRUE")), nil
	}
	return p.parsePredicate()
}

// tailAt reports whether the token k ahead starts a predicate's tail (a comparison
// operator, IS, [NOT] IN, [NOT] BETWEEN, [NOT] LIKE).
func (p *parser) tailAt(k int) bool {
	t, n := p.peekAt(k), p.peekAt(k+1)
	return t.kind == tOp || t.isKeyword("IS") || t.isKeyword("IN") || t.isKeyword("BETWEEN") ||
		t.isKeyword("LIKE") || (t.isKeyword("NOT") && (n.isKeyword("IN") || n.isKeyword("BETWEEN") || n.isKeyword("LIKE")))
}

var opByText = map[string]Op{"=": OpEq, "==": OpEq, "<>": OpNe, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe, "<=>": OpNullSafeEq}

func (p *parser) parsePredicate() (Expr, error) {
	left, err := p.parseValue()
	if err != nil {
		return nil, err
	}
	if p.general && !p.tailAt(0) {
		return left, nil // a boolean operand (ParseSQL)
	}
	t := p.next()
	switch {
	case t.kind == tOp:
		right, err := p.parseValue()
		if err != nil {
			return nil, err
		}
		return Compare(opByText[t.text], left, right), nil
	case t.isKeyword("IS"):
		neg := false
		if p.peek().isKeyword("NOT") {
			p.next()
			neg = true
		}
		if n := p.next(); !n.isKeyword("NULL") {
			if neg {
				return nil, p.errExpected(n, "NULL")
			}
			return nil, p.errExpected(n, "NOT", "NULL")
		}
		return &IsNullExpr{Value: left, Negated: neg}, nil
	case t.isKeyword("NOT"):
		n := p.next()
		switch {
		case n.isKeyword("IN"):
			return p.parseInList(left, true)
		case n.isKeyword("BETWEEN"):
			return p.parseBetween(left, true)
		case n.isKeyword("LIKE"):
			return p.parseLike(left, true)
		}
		return nil, p.errExpected(n, "IN", "BETWEEN", "LIKE")
	case t.isKeyword("IN"):
		return p.parseInList(left, false)
	case t.isKeyword("BETWEEN"):
		return p.parseBetween(left, false)
	case t.isKeyword("LIKE"):
		return p.parseLike(left, false)
	}
	return nil, p.errExpected(t, "comparison operator", "IS", "IN", "BETWEEN", "LIKE")
}

func (p *parser) parseInList(left Expr, neg bool) (Expr, error) {
	if t := p.next(); t.kind != tLParen {
		return nil, p.errExpected(t, "'('")
	}
	var list []Expr
	for {
		v, err := p.parseValue()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		t := p.next()
		if t.kind == tRParen {
			break
		}
		if t.kind != tComma {
			return nil, p.errExpected(t, "','", "')'")
		}
	}
	return &InExpr{Value: left, List: list, Negated: neg}, nil
}

func (p *parser) parseBetween(left Expr, neg bool) (Expr, error) {
	low, err := p.parseValue()
	if err != nil {
		return nil, err
	}
	if t := p.next(); !t.isKeyword("AND") {
		return nil, p.errExpected(t, "AND")
	}
	high, err := p.parseValue()
	if err != nil {
		return nil, err
	}
	return &BetweenExpr{Value: left, Low: low, High: high, Negated: neg}, nil
}

func (p *parser) parseLike(left Expr, neg bool) (Expr, error) {
	t := p.next()
	if t.kind != tString {
		return nil, p.errExpected(t, "pattern string")
	}
	if _, err := compileLike(t.text); err != nil {
		return nil, &ParseError{Pos: t.pos, Msg: err.Error()}
	}
	return &LikeExpr{Value: left, Pattern: t.text, Negated: neg}, nil
}

var operandExpected = []string{"column", "literal"}

// parseValue parses a predicate operand: a column or literal (Parse), a scalar
// expression (ParseSQL).
func (p *parser) parseValue() (Expr, error) {
	if p.general {
		return p.parseScalar()
	}
	return p.parseOperand()
}

func (p *parser) parseOperand() (Expr, error) {
	t := p.next()
	switch t.kind {
	case tArith:
		// A signed number: the sign is folded into the literal.
		if (t.text == "-" || t.text == "+") && p.peek().kind == tNumber {
			n := p.next()
			v, ok := parseNumber(t.text + n.text)
			if !ok {
				return nil, &ParseError{Pos: t.pos, Msg: "invalid number '" + t.text + n.raw + "'"}
			}
			return &Literal{Value: v, Text: t.text + n.text}, nil
		}
	case tNumber:
		v, ok := parseNumber(t.text)
		if !ok {
			return nil, &ParseError{Pos: t.pos, Msg: "invalid number " + t.describe()}
		}
		return &Literal{Value: v, Text: t.text}, nil
	case tString:
		return Lit(value.String(t.text)), nil
	case tHexString:
		b, err := hex.DecodeString(t.text)
		if err != nil {
			return nil, &ParseError{Pos: t.pos, Msg: "invalid hex string " + t.describe()}
		}
		return Lit(value.Binary(b)), nil
	case tQuoted:
		return p.parseColumn(t)
	case tIdent:
		switch strings.ToUpper(t.text) {
		case "TRUE":
			return Lit(value.Bool(true)), nil
		case "FALSE":
			return Lit(value.Bool(false)), nil
		case "NULL":
			return Lit(value.Null()), nil
		case "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "DOUBLE":
			if p.peek().kind == tString {
				return p.parseTypedLiteral(strings.ToUpper(t.text), p.next())
			}
			return nil, p.errExpected(p.peek(), "string after "+strings.ToUpper(t.text))
		}
		if keywords[strings.ToUpper(t.text)] {
			return nil, p.errExpected(t, operandExpected...)
		}
		return p.parseColumn(t)
	}
	return nil, p.errExpected(t, operandExpected...)
}

func (p *parser) parseTypedLiteral(kw string, s token) (Expr, error) {
	switch kw {
	case "DATE":
		d, err := ParseDate(s.text)
		if err != nil {
			return nil, &ParseError{Pos: s.pos, Msg: "found invalid date " + s.raw, Expected: []string{"'YYYY-MM-DD'"}}
		}
		return Lit(value.Date(d)), nil
	case "TIMESTAMP", "TIMESTAMP_NTZ":
		us, zoned, err := ParseTimestamp(s.text)
		if err != nil || (zoned && kw == "TIMESTAMP_NTZ") {
			return nil, &ParseError{Pos: s.pos, Msg: "found invalid timestamp " + s.raw, Expected: []string{"'YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM|Z]'"}}
		}
		if zoned {
			return Lit(value.Timestamp(us)), nil
		}
		return Lit(value.TimestampNTZ(us)), nil
	default: // DOUBLE
		f, ok := parseFloatText(s.text)
		if !ok {
			return nil, &ParseError{Pos: s.pos, Msg: "found invalid double " + s.raw, Expected: []string{"number", "'NaN'", "'Infinity'", "'-Infinity'"}}
		}
		return Lit(value.Float64(f)), nil
	}
}

func (p *parser) parseColumn(first token) (Expr, error) {
	path := []string{first.text}
	dq := strings.HasPrefix(first.raw, `"`)
	for p.peek().kind == tDot {
		p.next()
		t := p.next()
		switch {
		case t.kind == tQuoted || t.kind == tIdent:
			path = append(path, t.text)
			dq = dq || strings.HasPrefix(t.raw, `"`)
		default:
			return nil, p.errExpected(t, "field name")
		}
	}
	return &ColumnRef{Path: path, DoubleQuoted: dq}, nil
}
