package expr

import (
	"strings"
)

// SQL expressions: the expressions Delta table metadata stores — CHECK constraints
// (delta.constraints.<name>), column invariants (delta.invariants) and generation
// expressions (delta.generationExpression) — as Spark SQL text. They mix the two
// grammars: predicates whose operands are scalar expressions (`a + b > 0`,
// `length(name) <= 10`), boolean operands used as predicates (`is_active`), and calls of
// built-in functions (`year(ts)`, see Functions). ParseSQL reads them; BindCheck binds a
// boolean one as a predicate (*Bound), BindExpression any one as a value
// (*BoundScalar).

// FuncExpr is a call of a built-in function, `name(arg, ...)`. Name is kept as written;
// functions are looked up case-insensitively when the call is bound (Functions lists
// them). Bind (filters) does not accept calls; BindScalar, BindCheck and
// BindExpression do.
type FuncExpr struct {
	Name string
	Args []Expr
}

func (*FuncExpr) isExpr() {}

// Call builds `name(args...)`.
func Call(name string, args ...Expr) Expr { return &FuncExpr{Name: name, Args: args} }

// String renders `name(arg, ...)`.
func (f *FuncExpr) String() string {
	return f.Name + "(" + joinExprs(f.Args, ", ", nil) + ")"
}

// ParseSQL parses a SQL expression as Spark stores them in table metadata (CHECK
// constraints, column invariants, generation expressions):
//
//	expr      := term (OR term)*
//	term      := factor (AND factor)*
//	factor    := NOT factor | predicate
//	predicate := scalar [ cmp scalar | [NOT] BETWEEN scalar AND scalar
//	           | [NOT] IN '(' scalar (',' scalar)* ')' | IS [NOT] NULL
//	           | [NOT] LIKE 'pattern' ]
//
// where scalar is ParseScalar's grammar in which a parenthesised expression may be a
// whole predicate (`(a > 0) = flag`), CASE conditions are expr, and a name followed by
// '(' calls a function (`year(ts)`, `substring(s, 1, 3)`). A predicate without a
// comparison is a boolean operand (`is_active AND amount > 0`). Everything else is as
// in Parse (literals, quoting, keywords); the result of a boolean expression is also a
// valid Parse expression when it uses no scalar operand.
//
// Errors are *ParseError values with the position and what was expected.
func ParseSQL(s string) (Expr, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, general: true}
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errExpected(t, "operator", "AND", "OR", "end of input")
	}
	return e, nil
}

// parseCall parses `name(arg, ...)` (the name is the current token, '(' the next).
func (p *parser) parseCall() (Expr, error) {
	name := p.next()
	p.next() // (
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	if err := p.operator(name); err != nil {
		return nil, err
	}
	f := &FuncExpr{Name: name.text}
	if p.peek().kind == tRParen {
		p.next()
		return f, nil
	}
	for {
		var (
			a   Expr
			err error
		)
		if p.general {
			a, err = p.parseOr()
		} else {
			a, err = p.parseScalar()
		}
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, a)
		t := p.next()
		if t.kind == tRParen {
			return f, nil
		}
		if t.kind != tComma {
			return nil, p.errExpected(t, "','", "')'", "operator")
		}
	}
}

// equalFunc is Equal for calls: the same function (names compared
// case-insensitively) with equal arguments.
func equalFunc(a *FuncExpr, b Expr) bool {
	bf, ok := b.(*FuncExpr)
	return ok && strings.EqualFold(a.Name, bf.Name) && equalList(a.Args, bf.Args)
}
