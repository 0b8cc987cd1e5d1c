package expr

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ParseScalar parses a scalar expression, the value of an UPDATE assignment, such as
// `price * 1.1`, `first || ' ' || last` or `CASE WHEN qty > 10 THEN 'bulk' ELSE 'unit' END`.
//
// Grammar (keywords case-insensitive; precedence and left associativity as in Spark SQL,
// where `||` binds like + and -):
//
//	scalar  := term (('+' | '-' | '||') term)*
//	term    := unary (('*' | '/' | '%') unary)*
//	unary   := '-' unary | '+' unary | primary
//	primary := literal | column | '(' scalar ')'
//	         | CAST '(' scalar AS type ')'
//	         | CASE (WHEN predicate THEN scalar)+ [ELSE scalar] END
//	         | CONCAT '(' scalar (',' scalar)* ')'
//	type    := BOOLEAN | TINYINT | BYTE | SMALLINT | SHORT | INT | INTEGER | BIGINT | LONG
//	         | FLOAT | REAL | DOUBLE | DECIMAL ['(' p [',' s] ')'] | STRING | BINARY | DATE
//	         | TIMESTAMP | TIMESTAMP_LTZ | TIMESTAMP_NTZ
//
// literal and column are as in Parse; predicate is Parse's grammar (its operands are
// columns and literals). `-` directly before a number is part of the literal. CAST, CASE
// and CONCAT are keywords only where they start their construct (`cast`, `case` and
// `concat` remain usable as column names); WHEN, THEN, ELSE and END must be back-quoted
// to be used as column names in a scalar expression.
//
// An expression has at most MaxScalarOperators operators and nests at most 200 deep
// (parentheses, CAST, CASE, unary minus); larger ones are refused with a ParseError, so
// binding and evaluation, which recurse through the tree, stay shallow. Parsing and
// binding are linear in the expression's size.
//
// Errors are *ParseError values with the position and what was expected.
func ParseScalar(s string) (Expr, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.parseScalar()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errExpected(t, "operator", "end of input")
	}
	return e, nil
}

// ParseAssignments parses an UPDATE SET list: `c = expr, d = expr, ...`, each value a
// scalar expression (see ParseScalar) and each target a column name (back-quoted if
// needed). Every Assignment records its position for binding errors.
func ParseAssignments(s string) ([]Assignment, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	var out []Assignment
	for {
		t := p.next()
		if !(t.kind == tQuoted || (t.kind == tIdent && !keywords[strings.ToUpper(t.text)])) {
			return nil, p.errExpected(t, "column name")
		}
		col, err := p.parseColumn(t)
		if err != nil {
			return nil, err
		}
		if eq := p.next(); eq.kind != tOp || eq.text != "=" {
			return nil, p.errExpected(eq, "'='")
		}
		p.ops = 0 // the bound is per assignment
		v, err := p.parseScalar()
		if err != nil {
			return nil, err
		}
		out = append(out, Assignment{Column: col.(*ColumnRef), Value: v, Pos: t.pos})
		switch n := p.next(); n.kind {
		case tEOF:
			return out, nil
		case tComma:
		default:
			return nil, p.errExpected(n, "','", "operator", "end of input")
		}
	}
}

func (p *parser) parseScalar() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	left, err := p.parseTerm()
	if err != nil {
		return nil, err
	}
	var chain *ConcatExpr // the a || b || ... this loop is building (appended in place)
	for {
		t := p.peek()
		if t.kind != tArith || (t.text != "+" && t.text != "-" && t.text != "||") {
			return left, nil
		}
		if err := p.operator(t); err != nil {
			return nil, err
		}
		p.next()
		right, err := p.parseTerm()
		if err != nil {
			return nil, err
		}
		switch t.text {
		case "+":
			left = Add(left, right)
		case "-":
			left = Sub(left, right)
		default:
			if chain != nil && left == Expr(chain) {
				chain.Args = append(chain.Args, right)
			} else if c, ok := left.(*ConcatExpr); ok && c.Pipe {
				chain = &ConcatExpr{Args: append(append([]Expr(nil), c.Args...), right), Pipe: true}
				left = chain
			} else {
				chain = &ConcatExpr{Args: []Expr{left, right}, Pipe: true}
				left = chain
			}
		}
	}
}

func (p *parser) parseTerm() (Expr, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tArith || (t.text != "*" && t.text != "/" && t.text != "%") {
			return left, nil
		}
		if err := p.operator(t); err != nil {
			return nil, err
		}
		p.next()
		right, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		op := map[string]ArithOp{"*": OpMul, "/": OpDiv, "%": OpMod}[t.text]
		left = &ArithExpr{Op: op, Left: left, Right: right}
	}
}

func (p *parser) parseUnary() (Expr, error) {
	t := p.peek()
	if t.kind != tArith || (t.text != "-" && t.text != "+") {
		return p.parsePrimary()
	}
	if p.peekAt(1).kind == tNumber {
		return p.parseOperand() // a signed literal
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	if err := p.operator(t); err != nil {
		return nil, err
	}
	p.next()
	v, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if t.text == "+" {
		return v, nil
	}
	return Neg(v), nil
}

var scalarExpected = []string{"column", "literal", "'('", "CAST", "CASE"}

func (p *parser) parsePrimary() (Expr, error) {
	t := p.peek()
	switch {
	case t.kind == tLParen:
		p.next()
		var (
			e   Expr
			err error
		)
		if p.general {
			e, err = p.parseOr() // a parenthesised predicate is a boolean value
		} else {
			e, err = p.parseScalar()
		}
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, p.errExpected(c, "')'", "operator")
		}
		return e, nil
	case t.isKeyword("CAST") && p.peekAt(1).kind == tLParen:
		return p.parseCast()
	case t.isKeyword("CASE") && p.peekAt(1).isKeyword("WHEN"):
		return p.parseCase()
	case t.isKeyword("CONCAT") && p.peekAt(1).kind == tLParen:
		return p.parseConcat()
	case t.kind == tIdent && p.peekAt(1).kind == tLParen && !keywords[strings.ToUpper(t.text)] && !scalarWords[strings.ToUpper(t.text)]:
		return p.parseCall()
	case t.isKeyword("WHEN") || t.isKeyword("THEN") || t.isKeyword("ELSE") || t.isKeyword("END"):
		return nil, p.errExpected(t, scalarExpected...)
	case t.kind == tIdent && keywords[strings.ToUpper(t.text)]:
		switch strings.ToUpper(t.text) {
		case "TRUE", "FALSE", "NULL", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "DOUBLE":
		default:
			return nil, p.errExpected(t, scalarExpected...)
		}
	case t.kind == tEOF || t.kind == tRParen || t.kind == tComma || t.kind == tOp || t.kind == tArith || t.kind == tDot:
		return nil, p.errExpected(t, scalarExpected...)
	}
	return p.parseOperand()
}

func (p *parser) parseCast() (Expr, error) {
	p.next() // CAST
	p.next() // (
	v, err := p.parseScalar()
	if err != nil {
		return nil, err
	}
	if t := p.next(); !t.isKeyword("AS") {
		return nil, p.errExpected(t, "AS", "operator")
	}
	typ, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if t := p.next(); t.kind != tRParen {
		return nil, p.errExpected(t, "')'")
	}
	return &CastExpr{Value: v, Type: typ}, nil
}

var typeExpected = []string{"type name (boolean, byte, short, int, long, float, double, decimal(p,s), string, binary, date, timestamp, timestamp_ntz)"}

func (p *parser) parseType() (arrow.DataType, error) {
	t := p.next()
	if t.kind != tIdent {
		return nil, p.errExpected(t, typeExpected...)
	}
	name := strings.ToUpper(t.text)
	if name == "DECIMAL" || name == "DEC" || name == "NUMERIC" {
		prec, scale := int32(10), int32(0) // Spark's DECIMAL default
		if p.peek().kind == tLParen {
			p.next()
			var err error
			if prec, err = p.parseTypeInt(); err != nil {
				return nil, err
			}
			scale = 0
			if p.peek().kind == tComma {
				p.next()
				if scale, err = p.parseTypeInt(); err != nil {
					return nil, err
				}
			}
			if c := p.next(); c.kind != tRParen {
				return nil, p.errExpected(c, "','", "')'")
			}
		}
		if prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return nil, &ParseError{Pos: t.pos, Msg: "invalid decimal(" + strconv.Itoa(int(prec)) + "," + strconv.Itoa(int(scale)) +
				"): precision must be 1..38 and scale 0..precision"}
		}
		return &arrow.Decimal128Type{Precision: prec, Scale: scale}, nil
	}
	if dt, ok := typeByName[name]; ok {
		return dt, nil
	}
	return nil, p.errExpected(t, typeExpected...)
}

func (p *parser) parseTypeInt() (int32, error) {
	t := p.next()
	if t.kind != tNumber {
		return 0, p.errExpected(t, "integer")
	}
	n, err := strconv.Atoi(t.text)
	if err != nil || n > 1000 {
		return 0, &ParseError{Pos: t.pos, Msg: "invalid integer " + t.describe()}
	}
	return int32(n), nil
}

func (p *parser) parseCase() (Expr, error) {
	p.next() // CASE
	c := &CaseExpr{}
	for p.peek().isKeyword("WHEN") {
		p.next()
		cond, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if t := p.next(); !t.isKeyword("THEN") {
			return nil, p.errExpected(t, "THEN", "AND", "OR")
		}
		v, err := p.parseScalar()
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, WhenClause{Cond: cond, Value: v})
	}
	if p.peek().isKeyword("ELSE") {
		p.next()
		v, err := p.parseScalar()
		if err != nil {
			return nil, err
		}
		c.Else = v
	}
	if t := p.next(); !t.isKeyword("END") {
		return nil, p.errExpected(t, "WHEN", "ELSE", "END", "operator")
	}
	return c, nil
}

func (p *parser) parseConcat() (Expr, error) {
	p.next() // CONCAT
	p.next() // (
	c := &ConcatExpr{}
	for {
		v, err := p.parseScalar()
		if err != nil {
			return nil, err
		}
		c.Args = append(c.Args, v)
		t := p.next()
		if t.kind == tRParen {
			return c, nil
		}
		if t.kind != tComma {
			return nil, p.errExpected(t, "','", "')'", "operator")
		}
	}
}
