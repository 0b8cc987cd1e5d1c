package expr

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// Built-in functions. Only functions whose Spark SQL semantics skiplake reproduces
// exactly are here; a call of any other function is refused when it is bound (an
// *UnsupportedFunctionError), so that a constraint or generation expression skiplake
// cannot evaluate as Spark would makes the write fail rather than pass unchecked.
//
// Time zones: Spark evaluates the date parts of a timestamp (with time zone) in the
// session time zone; skiplake has none and evaluates them in UTC, as Spark does with
// spark.sql.session.timeZone=UTC. timestamp_ntz values have no zone.

// UnsupportedFunctionError reports a call of a function skiplake does not evaluate.
type UnsupportedFunctionError struct {
	// Name is the function as written.
	Name string
	// Reason says why, when the function exists but this use of it is not supported.
	Reason string
}

// Error renders the message.
func (e *UnsupportedFunctionError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("expr: function %s: %s", e.Name, e.Reason)
	}
	return fmt.Sprintf("expr: function %s is not supported (skiplake evaluates only functions whose Spark semantics it reproduces exactly: %s)",
		e.Name, strings.Join(Functions(), ", "))
}

// Unwrap returns ErrUnsupportedFunction.
func (e *UnsupportedFunctionError) Unwrap() error { return ErrUnsupportedFunction }

// fnSpec is one built-in function: its names and its binding.
type fnSpec struct {
	names []string
	bind  func(b *binder, e *FuncExpr, args []scalarNode) (scalarNode, error)
}

var functions = map[string]*fnSpec{}

func init() {
	for _, f := range []*fnSpec{
		{names: []string{"year"}, bind: datePart(func(y, m, d int64) int64 { return y })},
		{names: []string{"month"}, bind: datePart(func(y, m, d int64) int64 { return m })},
		{names: []string{"day", "dayofmonth"}, bind: datePart(func(y, m, d int64) int64 { return d })},
		{names: []string{"quarter"}, bind: datePart(func(y, m, d int64) int64 { return (m-1)/3 + 1 })},
		{names: []string{"dayofweek"}, bind: bindDayOfWeek},
		{names: []string{"hour"}, bind: timePart(3600_000_000, 24)},
		{names: []string{"minute"}, bind: timePart(60_000_000, 60)},
		{names: []string{"second"}, bind: timePart(1_000_000, 60)},
		{names: []string{"to_date"}, bind: bindToDate},
		{names: []string{"date_format"}, bind: bindDateFormat},
		{names: []string{"date_trunc"}, bind: bindDateTrunc},
		{names: []string{"trunc"}, bind: bindTrunc},
		{names: []string{"length", "char_length", "character_length"}, bind: bindLength},
		{names: []string{"lower", "lcase"}, bind: bindCase(false)},
		{names: []string{"upper", "ucase"}, bind: bindCase(true)},
		{names: []string{"substring", "substr"}, bind: bindSubstring},
		{names: []string{"trim"}, bind: bindTrim(true, true)},
		{names: []string{"ltrim"}, bind: bindTrim(true, false)},
		{names: []string{"rtrim"}, bind: bindTrim(false, true)},
		{names: []string{"abs"}, bind: bindAbs},
		{names: []string{"coalesce", "nvl", "ifnull"}, bind: bindCoalesce},
		{names: []string{"isnull"}, bind: bindIsNull(false)},
		{names: []string{"isnotnull"}, bind: bindIsNull(true)},
	} {
		for _, n := range f.names {
			functions[n] = f
		}
	}
}

// Functions lists the names of the built-in functions (sorted): year, month,
// day/dayofmonth, quarter, dayofweek, hour, minute, second of dates and timestamps (UTC);
// to_date(x) (CAST to date); date_format(ts, pattern) for patterns of yyyy, MM, dd, HH,
// mm, ss and the separators - / : . _ and space; date_trunc(unit, ts); trunc(date, unit);
// length (characters of a string, bytes of binary); lower and upper (ASCII; any other
// character fails the row, as Java's case mapping depends on the JVM's locale);
// substring(s, pos[, len]) in characters; trim, ltrim, rtrim (spaces); abs; coalesce,
// nvl, ifnull; isnull, isnotnull.
func Functions() []string {
	out := make([]string, 0, len(functions))
	for n := range functions {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (b *binder) bindFunc(e *FuncExpr) (scalarNode, error) {
	spec := functions[strings.ToLower(e.Name)]
	if spec == nil {
		return nil, &UnsupportedFunctionError{Name: e.Name}
	}
	args := make([]scalarNode, len(e.Args))
	for i, a := range e.Args {
		n, err := b.bindScalar(a)
		if err != nil {
			return nil, err
		}
		args[i] = n
	}
	return spec.bind(b, e, args)
}

// funcNode is a strict function (NULL when any argument is NULL) of its arguments.
// row computes a value from non-null arguments; ints, when set, is the same
// computation for one integer-family argument and result, used by evalVec.
type funcNode struct {
	src  *FuncExpr
	args []scalarNode
	t    arrow.DataType
	row  func(args []value.Value) (value.Value, error)
	ints func(x int64) (int64, error)
}

func (n *funcNode) dataType() arrow.DataType { return n.t }

// intFunc is a one-argument function over an int64-backed value (an integer, a date's
// days, a timestamp's microseconds) that gives one: k serves the vectorised path and,
// with the result wrapped by out, the row path, so the two cannot disagree.
func intFunc(e *FuncExpr, a scalarNode, t arrow.DataType, out func(int64) value.Value, k func(int64) (int64, error)) *funcNode {
	return &funcNode{src: e, args: []scalarNode{a}, t: t, ints: k,
		row: func(v []value.Value) (value.Value, error) {
			z, err := k(v[0].AsInt64())
			if err != nil {
				return value.Value{}, err
			}
			return out(z), nil
		}}
}

// total lifts a function that cannot fail to intFunc's form.
func total(f func(int64) int64) func(int64) (int64, error) {
	return func(x int64) (int64, error) { return f(x), nil }
}

func (n *funcNode) String() string {
	parts := make([]string, len(n.args))
	for i, a := range n.args {
		parts[i] = a.String()
	}
	return strings.ToLower(n.src.Name) + "(" + strings.Join(parts, ", ") + ")"
}

func (n *funcNode) evalRow(row []value.Value) (value.Value, error) {
	vals := make([]value.Value, len(n.args))
	for i, a := range n.args {
		v, err := a.evalRow(row)
		if err != nil || v.IsNull() {
			return v, err // a NULL argument: the others are not evaluated
		}
		vals[i] = v
	}
	return n.row(vals)
}

func (n *funcNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	vecs := make([]*vec, len(n.args))
	var valid []uint64
	live := mask
	for i, a := range n.args {
		v, err := a.evalVec(c, live)
		if err != nil {
			return nil, err
		}
		vecs[i] = v
		valid = andValidity(valid, v.valid, c.n)
		live = andValidity(mask, valid, c.n)
	}
	out := newVec(n.t, c.n)
	out.valid = valid
	if out.valid == nil {
		out.valid = make([]uint64, (c.n+63)/64)
		fillWords(out.valid, c.n, true)
	} else {
		out.valid = append([]uint64(nil), out.valid...)
	}
	fail := func(i int, err error) error { return evalErr(i, n.src.String(), err) }
	if n.ints != nil && len(vecs) == 1 && vecs[0].i != nil {
		x := vecs[0].i
		for i := range c.n {
			if !bitAt(valid, i) || !bitAt(mask, i) {
				continue
			}
			z, err := n.ints(x[i])
			if err != nil {
				return nil, fail(i, err)
			}
			out.i[i] = z
		}
		return out, nil
	}
	args := make([]value.Value, len(vecs))
	for i := range c.n {
		if !bitAt(valid, i) || !bitAt(mask, i) {
			continue
		}
		for k, v := range vecs {
			args[k] = valueAt(v, i)
		}
		z, err := n.row(args)
		if err != nil {
			return nil, fail(i, err)
		}
		if z.IsNull() {
			clearBit(out.valid, i)
			continue
		}
		setValue(out, i, z)
	}
	return out, nil
}

// arity checks the number of arguments.
func arity(e *FuncExpr, args []scalarNode, lo, hi int) error {
	if len(args) < lo || len(args) > hi {
		want := strconv.Itoa(lo)
		if hi > lo {
			want += " or " + strconv.Itoa(hi)
		}
		return &ScalarTypeError{Expr: e.String(), Reason: fmt.Sprintf("%s takes %s argument(s), got %d", strings.ToLower(e.Name), want, len(args))}
	}
	return nil
}

// asDate converts a date, timestamp or timestamp_ntz argument to a date (Spark's
// implicit cast; timestamps at their UTC date).
func asDate(e *FuncExpr, a scalarNode) (scalarNode, error) {
	switch kindOf(a.dataType()) {
	case tkDate, tkNull:
		return convert(a, dtDate, false), nil
	case tkTimestamp, tkTimestampNTZ:
		return &castNode{v: a, t: dtDate}, nil
	}
	return nil, &ScalarTypeError{Expr: e.String(), Reason: "needs a date or timestamp, not " + TypeName(a.dataType()) + " (use CAST)"}
}

// asTimestamp converts a date (at midnight), timestamp or timestamp_ntz argument to a
// timestamp of microseconds; ntz keeps its type unless toUTC is set.
func asTimestamp(e *FuncExpr, a scalarNode, toUTC bool) (scalarNode, error) {
	switch kindOf(a.dataType()) {
	case tkTimestamp:
		return a, nil
	case tkTimestampNTZ:
		if toUTC {
			return &castNode{v: a, t: dtTimestamp}, nil
		}
		return a, nil
	case tkDate:
		return &castNode{v: a, t: dtTimestamp}, nil
	case tkNull:
		return convert(a, dtTimestamp, false), nil
	}
	return nil, &ScalarTypeError{Expr: e.String(), Reason: "needs a timestamp or date, not " + TypeName(a.dataType()) + " (use CAST)"}
}

// stringLiteral returns the value of a string literal argument.
func stringLiteral(e *FuncExpr, a scalarNode, what string) (string, error) {
	if l, ok := a.(*litNode); ok && kindOf(l.t) == tkString && !l.v.IsNull() {
		return l.v.AsString(), nil
	}
	return "", &UnsupportedFunctionError{Name: e.Name, Reason: what + " must be a string literal"}
}

func datePart(part func(y, m, d int64) int64) func(*binder, *FuncExpr, []scalarNode) (scalarNode, error) {
	return func(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
		if err := arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		a, err := asDate(e, args[0])
		if err != nil {
			return nil, err
		}
		return intFunc(e, a, dtInt32, value.Int64, total(func(days int64) int64 { return part(value.CivilFromDays(days)) })), nil
	}
}

func bindDayOfWeek(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if err := arity(e, args, 1, 1); err != nil {
		return nil, err
	}
	a, err := asDate(e, args[0])
	if err != nil {
		return nil, err
	}
	dow := func(days int64) int64 { return floorMod(days+4, 7) + 1 } // 1970-01-01 was a Thursday; 1 = Sunday
	return intFunc(e, a, dtInt32, value.Int64, total(dow)), nil
}

func floorMod(a, b int64) int64 { return a - value.FloorDiv(a, b)*b }

func timePart(unit, modulo int64) func(*binder, *FuncExpr, []scalarNode) (scalarNode, error) {
	return func(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
		if err := arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		a, err := asTimestamp(e, args[0], false)
		if err != nil {
			return nil, err
		}
		part := func(us int64) int64 { return floorMod(value.FloorDiv(us, unit), modulo) }
		return intFunc(e, a, dtInt32, value.Int64, total(part)), nil
	}
}

func bindToDate(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if len(args) == 2 {
		return nil, &UnsupportedFunctionError{Name: e.Name, Reason: "a format argument is not supported (Java date patterns)"}
	}
	if err := arity(e, args, 1, 1); err != nil {
		return nil, err
	}
	a := args[0]
	if !castAllowed(a.dataType(), dtDate) {
		return nil, &ScalarTypeError{Expr: e.String(), Reason: TypeName(a.dataType()) + " cannot be converted to a date"}
	}
	if arrow.TypeEqual(a.dataType(), dtDate) {
		return a, nil
	}
	return &castNode{v: a, t: dtDate, src: e}, nil
}

// dateFormatTokens are the pattern runs date_format accepts.
var dateFormatTokens = []string{"yyyy", "MM", "dd", "HH", "mm", "ss"}

// compileDateFormat splits a pattern into tokens and separators, or refuses it.
func compileDateFormat(p string) ([]string, bool) {
	var out []string
	for i := 0; i < len(p); {
		matched := false
		for _, t := range dateFormatTokens {
			if strings.HasPrefix(p[i:], t) && (i+len(t) == len(p) || p[i+len(t)] != t[0]) {
				out = append(out, t)
				i += len(t)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		if !strings.ContainsRune("-/:._ ", rune(p[i])) {
			return nil, false
		}
		out = append(out, p[i:i+1])
		i++
	}
	return out, len(out) > 0
}

func bindDateFormat(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if err := arity(e, args, 2, 2); err != nil {
		return nil, err
	}
	a, err := asTimestamp(e, args[0], false)
	if err != nil {
		return nil, err
	}
	pat, err := stringLiteral(e, args[1], "the pattern")
	if err != nil {
		return nil, err
	}
	toks, ok := compileDateFormat(pat)
	if !ok {
		return nil, &UnsupportedFunctionError{Name: e.Name, Reason: fmt.Sprintf("pattern %q: only yyyy, MM, dd, HH, mm, ss and the separators - / : . _ and space are supported", pat)}
	}
	return &funcNode{src: e, args: []scalarNode{a, args[1]}, t: dtString, row: func(v []value.Value) (value.Value, error) {
		us := v[0].AsInt64()
		days := value.FloorDiv(us, microsPerDay)
		y, m, d := value.CivilFromDays(days)
		if y < 0 || y > 9999 {
			return value.Value{}, fmt.Errorf("%w: year %d is outside 0000-9999, which date_format prints as Spark does", ErrInvalidCast, y)
		}
		tod := us - days*microsPerDay
		var sb strings.Builder
		for _, t := range toks {
			switch t {
			case "yyyy":
				fmt.Fprintf(&sb, "%04d", y)
			case "MM":
				fmt.Fprintf(&sb, "%02d", m)
			case "dd":
				fmt.Fprintf(&sb, "%02d", d)
			case "HH":
				fmt.Fprintf(&sb, "%02d", tod/3600_000_000)
			case "mm":
				fmt.Fprintf(&sb, "%02d", tod/60_000_000%60)
			case "ss":
				fmt.Fprintf(&sb, "%02d", tod/1_000_000%60)
			default:
				sb.WriteString(t)
			}
		}
		return value.String(sb.String()), nil
	}}, nil
}

// truncUnit normalises a date_trunc / trunc unit (Spark's names), or "".
func truncUnit(s string, timeUnits bool) string {
	switch strings.ToUpper(s) {
	case "YEAR", "YYYY", "YY":
		return "year"
	case "QUARTER":
		return "quarter"
	case "MONTH", "MM", "MON":
		return "month"
	case "WEEK":
		return "week"
	}
	if !timeUnits {
		return ""
	}
	switch strings.ToUpper(s) {
	case "DAY", "DD":
		return "day"
	case "HOUR":
		return "hour"
	case "MINUTE":
		return "minute"
	case "SECOND":
		return "second"
	case "MILLISECOND":
		return "millisecond"
	case "MICROSECOND":
		return "microsecond"
	}
	return ""
}

// truncDays truncates a day number to the start of its year, quarter, month or
// (Monday-based) week.
func truncDays(days int64, unit string) int64 {
	y, m, _ := value.CivilFromDays(days)
	switch unit {
	case "year":
		return value.DaysFromCivil(y, 1, 1)
	case "quarter":
		return value.DaysFromCivil(y, (m-1)/3*3+1, 1)
	case "month":
		return value.DaysFromCivil(y, m, 1)
	case "week":
		return days - floorMod(days+3, 7) // 1970-01-01 was a Thursday: Monday is 3 days earlier
	}
	return days
}

func bindDateTrunc(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if err := arity(e, args, 2, 2); err != nil {
		return nil, err
	}
	unitText, err := stringLiteral(e, args[0], "the unit")
	if err != nil {
		return nil, err
	}
	unit := truncUnit(unitText, true)
	if unit == "" {
		return nil, &UnsupportedFunctionError{Name: e.Name, Reason: fmt.Sprintf("unit %q is not one of YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND", unitText)}
	}
	a, err := asTimestamp(e, args[1], true)
	if err != nil {
		return nil, err
	}
	k := func(us int64) (int64, error) {
		var step int64
		switch unit {
		case "day":
			step = microsPerDay
		case "hour":
			step = 3600_000_000
		case "minute":
			step = 60_000_000
		case "second":
			step = 1_000_000
		case "millisecond":
			step = 1000
		case "microsecond":
			return us, nil
		default:
			return truncDays(value.FloorDiv(us, microsPerDay), unit) * microsPerDay, nil
		}
		return value.FloorDiv(us, step) * step, nil
	}
	return intFunc(e, a, dtTimestamp, value.Timestamp, k), nil
}

func bindTrunc(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if err := arity(e, args, 2, 2); err != nil {
		return nil, err
	}
	a, err := asDate(e, args[0])
	if err != nil {
		return nil, err
	}
	unitText, err := stringLiteral(e, args[1], "the unit")
	if err != nil {
		return nil, err
	}
	unit := truncUnit(unitText, false)
	if unit == "" {
		return nil, &UnsupportedFunctionError{Name: e.Name, Reason: fmt.Sprintf("unit %q is not one of YEAR, QUARTER, MONTH, WEEK", unitText)}
	}
	return intFunc(e, a, dtDate, value.Date, total(func(d int64) int64 { return truncDays(d, unit) })), nil
}

func bindLength(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if err := arity(e, args, 1, 1); err != nil {
		return nil, err
	}
	a := args[0]
	switch kindOf(a.dataType()) {
	case tkString, tkNull:
		a = convert(a, dtString, false)
		return &funcNode{src: e, args: []scalarNode{a}, t: dtInt32, row: func(v []value.Value) (value.Value, error) {
			return value.Int64(int64(utf8.RuneCountInString(v[0].AsString()))), nil
		}}, nil
	case tkBinary:
		return &funcNode{src: e, args: []scalarNode{a}, t: dtInt32, row: func(v []value.Value) (value.Value, error) {
			return value.Int64(int64(len(v[0].AsString()))), nil
		}}, nil
	}
	return nil, &ScalarTypeError{Expr: e.String(), Reason: "needs a string or binary, not " + TypeName(a.dataType()) + " (use CAST)"}
}

// stringArg checks that a is a string (or NULL) and returns it as a string.
func stringArg(e *FuncExpr, a scalarNode) (scalarNode, error) {
	switch kindOf(a.dataType()) {
	case tkString, tkNull:
		return convert(a, dtString, false), nil
	}
	return nil, &ScalarTypeError{Expr: e.String(), Reason: "needs a string, not " + TypeName(a.dataType()) + " (use CAST)"}
}

// bindStringMap binds a function of one string argument to a string result; f
// maps a non-NULL value (NULL in, NULL out) and may fail for a value it cannot map.
func bindStringMap(e *FuncExpr, args []scalarNode, f func(s string) (string, error)) (scalarNode, error) {
	if err := arity(e, args, 1, 1); err != nil {
		return nil, err
	}
	a, err := stringArg(e, args[0])
	if err != nil {
		return nil, err
	}
	return &funcNode{src: e, args: []scalarNode{a}, t: dtString, row: func(v []value.Value) (value.Value, error) {
		out, err := f(v[0].AsString())
		if err != nil {
			return value.Value{}, err
		}
		return value.String(out), nil
	}}, nil
}

func bindCase(upper bool) func(*binder, *FuncExpr, []scalarNode) (scalarNode, error) {
	return func(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
		return bindStringMap(e, args, func(s string) (string, error) {
			for i := 0; i < len(s); i++ {
				if s[i] >= utf8.RuneSelf {
					return "", fmt.Errorf("%w: %s of a string with non-ASCII characters (%s): Java's case mapping depends on the JVM's locale, so skiplake cannot compute it as Spark would",
						ErrUnsupportedFunction, strings.ToLower(e.Name), value.String(s).String())
				}
			}
			if upper {
				return strings.ToUpper(s), nil
			}
			return strings.ToLower(s), nil
		})
	}
}

// intArg checks that a is an integer of at most 32 bits (Spark's IntegerType
// argument; a bigint is not implicitly narrowed) and returns it.
func intArg(e *FuncExpr, a scalarNode) (scalarNode, error) {
	switch kindOf(a.dataType()) {
	case tkNull:
		return convert(a, dtInt32, false), nil
	case tkInt:
		if intWidth(a.dataType()) <= 32 {
			return a, nil
		}
	}
	return nil, &ScalarTypeError{Expr: e.String(), Reason: "position and length must be int, not " + TypeName(a.dataType())}
}

// substringSQL is Spark's UTF8String.substringSQL: 1-based pos (0 means 1, negative
// counts from the end), length in characters (negative: empty).
func substringSQL(s string, pos, length int64) string {
	runes := []rune(s)
	n := int64(len(runes))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := start + length
	if length > math.MaxInt32 || end > math.MaxInt32 {
		end = math.MaxInt32
	}
	start = max(start, 0)
	if start >= end || start >= n {
		return ""
	}
	end = min(end, n)
	return string(runes[start:end])
}

func bindSubstring(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if err := arity(e, args, 2, 3); err != nil {
		return nil, err
	}
	s, err := stringArg(e, args[0])
	if err != nil {
		return nil, err
	}
	ns := []scalarNode{s}
	for _, a := range args[1:] {
		x, err := intArg(e, a)
		if err != nil {
			return nil, err
		}
		ns = append(ns, x)
	}
	return &funcNode{src: e, args: ns, t: dtString, row: func(v []value.Value) (value.Value, error) {
		length := int64(math.MaxInt32)
		if len(v) == 3 {
			length = v[2].AsInt64()
		}
		return value.String(substringSQL(v[0].AsString(), v[1].AsInt64(), length)), nil
	}}, nil
}

func bindTrim(left, right bool) func(*binder, *FuncExpr, []scalarNode) (scalarNode, error) {
	return func(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
		return bindStringMap(e, args, func(s string) (string, error) {
			if left {
				s = strings.TrimLeft(s, " ")
			}
			if right {
				s = strings.TrimRight(s, " ")
			}
			return s, nil
		})
	}
}

func bindAbs(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if err := arity(e, args, 1, 1); err != nil {
		return nil, err
	}
	a := args[0]
	t := a.dataType()
	switch kindOf(t) {
	case tkNull:
		return a, nil
	case tkInt:
		lo, _ := intBounds(t)
		k := func(x int64) (int64, error) {
			if x == lo {
				return 0, fmt.Errorf("%w: abs(%d) overflows %s", ErrOverflow, x, TypeName(t))
			}
			if x < 0 {
				return -x, nil
			}
			return x, nil
		}
		return intFunc(e, a, t, value.Int64, k), nil
	case tkFloat:
		return &funcNode{src: e, args: []scalarNode{a}, t: t, row: func(v []value.Value) (value.Value, error) {
			return value.Float64(math.Abs(v[0].AsFloat64())), nil
		}}, nil
	case tkDecimal:
		return &funcNode{src: e, args: []scalarNode{a}, t: t, row: func(v []value.Value) (value.Value, error) {
			u, p, s := v[0].AsDecimal()
			if u.Sign() < 0 {
				u = u.Negate()
			}
			return value.Decimal(u, p, s), nil
		}}, nil
	}
	return nil, &ScalarTypeError{Expr: e.String(), Reason: TypeName(t) + " is not a number"}
}

func bindIsNull(negated bool) func(*binder, *FuncExpr, []scalarNode) (scalarNode, error) {
	return func(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
		if err := arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		return &isNullNode{v: args[0], negated: negated}, nil
	}
}

// coalesceNode is the first non-NULL of its arguments (converted to one type);
// arguments after the first are evaluated only where the earlier ones are NULL.
type coalesceNode struct {
	src  *FuncExpr
	args []scalarNode
	t    arrow.DataType
}

func bindCoalesce(_ *binder, e *FuncExpr, args []scalarNode) (scalarNode, error) {
	if len(args) == 0 || (len(args) != 2 && !strings.EqualFold(e.Name, "coalesce")) {
		return nil, &ScalarTypeError{Expr: e.String(), Reason: strings.ToLower(e.Name) + " needs arguments (nvl and ifnull two)"}
	}
	t := dtNull
	for _, a := range args {
		c, ok := commonType(t, a.dataType())
		if !ok {
			return nil, &ScalarTypeError{Expr: e.String(), Reason: fmt.Sprintf("arguments of types %s and %s have no common type (use CAST)", TypeName(t), TypeName(a.dataType()))}
		}
		t = c
	}
	conv := make([]scalarNode, len(args))
	for i, a := range args {
		conv[i] = convert(a, t, false)
	}
	return &coalesceNode{src: e, args: conv, t: t}, nil
}

func (n *coalesceNode) dataType() arrow.DataType { return n.t }

func (n *coalesceNode) String() string {
	parts := make([]string, len(n.args))
	for i, a := range n.args {
		parts[i] = a.String()
	}
	return "coalesce(" + strings.Join(parts, ", ") + ")"
}

func (n *coalesceNode) evalRow(row []value.Value) (value.Value, error) {
	for _, a := range n.args {
		v, err := a.evalRow(row)
		if err != nil || !v.IsNull() {
			return v, err
		}
	}
	return value.Null(), nil
}

func (n *coalesceNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	words := (c.n + 63) / 64
	out := newVec(n.t, c.n)
	out.valid = make([]uint64, words)
	pending := make([]uint64, words)
	if mask == nil {
		fillWords(pending, c.n, true)
	} else {
		copy(pending, mask)
	}
	if kindOf(n.t) == tkNull {
		return out, nil
	}
	for _, a := range n.args {
		if allZero(pending) {
			break
		}
		v, err := a.evalVec(c, pending)
		if err != nil {
			return nil, err
		}
		for i := range c.n {
			if bitAt(pending, i) && bitAt(v.valid, i) {
				copyRow(out, v, i)
				setBit(out.valid, i)
				clearBit(pending, i)
			}
		}
	}
	return out, nil
}
