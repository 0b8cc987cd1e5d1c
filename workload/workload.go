package workload

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
)

// MaxLineBytes bounds one line of a workload file.
const MaxLineBytes = 1 << 20

// Query is one filter of a workload.
type Query struct {
	// Filter is the filter's canonical text (expr.Expr.String of the parsed
	// filter), which Parse reads back to an equal expression.
	Filter string `json:"filter"`
	// Weight is how much the query counts (> 0; 1 unless the file says otherwise).
	Weight float64 `json:"weight"`
	// Line is the query's line in its source file (0 when not read from a file).
	Line int `json:"line,omitempty"`

	expr expr.Expr
}

// Expr returns the parsed filter (parsing Filter again for a Query built as a
// literal or decoded from JSON; nil if it does not parse).
func (q Query) Expr() expr.Expr {
	if q.expr == nil {
		q.expr, _ = expr.Parse(q.Filter)
	}
	return q.expr
}

// NewQuery parses filter (the expr grammar) into a query of the given weight
// (0 means 1). Errors wrap ErrSyntax.
func NewQuery(filter string, weight float64) (Query, error) {
	if weight == 0 {
		weight = 1
	}
	if !(weight > 0) || math.IsInf(weight, 0) {
		return Query{}, &SyntaxError{Line: 1, Column: 1, Msg: fmt.Sprintf("weight %v is not a positive finite number", weight)}
	}
	e, err := expr.Parse(filter)
	if err != nil {
		col := 1
		var pe *expr.ParseError
		if errors.As(err, &pe) {
			col = pe.Pos
		}
		return Query{}, &SyntaxError{Line: 1, Column: col, Msg: filterMessage(err), Err: err}
	}
	return Query{Filter: e.String(), Weight: weight, expr: e}, nil
}

// Workload is a list of weighted filters. It is plain data: safe to share once
// built, not safe to modify concurrently.
type Workload struct {
	// Queries are the filters, in file order.
	Queries []Query `json:"queries"`
}

// New returns a workload of the given queries.
func New(queries ...Query) *Workload { return &Workload{Queries: queries} }

// Len returns the number of queries.
func (w *Workload) Len() int { return len(w.Queries) }

// TotalWeight returns the sum of the queries' weights.
func (w *Workload) TotalWeight() float64 {
	var s float64
	for _, q := range w.Queries {
		s += q.Weight
	}
	return s
}

// Parse reads a workload file (see the package documentation for the format).
// source names the input in errors. An input without any filter is ErrEmpty.
func Parse(r io.Reader, source string) (*Workload, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	w := &Workload{}
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "--") {
			continue
		}
		q, err := parseLine(text, source, line)
		if err != nil {
			return nil, err
		}
		w.Queries = append(w.Queries, q)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &SyntaxError{Source: source, Line: line + 1, Column: 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
		}
		return nil, fmt.Errorf("workload: reading %s: %w", nameOr(source), err)
	}
	if len(w.Queries) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrEmpty, nameOr(source))
	}
	return w, nil
}

// ParseFile reads the workload file at path.
func ParseFile(path string) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

func nameOr(source string) string {
	if source == "" {
		return "the workload"
	}
	return source
}

// parseLine reads "[WEIGHT:] FILTER".
func parseLine(text, source string, line int) (Query, error) {
	start := 0
	weight := 1.0
	if n, w, ok := weightPrefix(text); ok {
		if !(w > 0) || math.IsInf(w, 0) {
			return Query{}, &SyntaxError{Source: source, Line: line, Column: leadingSpace(text) + 1,
				Msg: fmt.Sprintf("weight %q is not a positive finite number", strings.TrimSpace(text[:n-1]))}
		}
		weight, start = w, n
	}
	body := text[start:]
	if strings.TrimSpace(body) == "" {
		return Query{}, &SyntaxError{Source: source, Line: line, Column: start + 1, Msg: "a weight without a filter"}
	}
	e, err := expr.Parse(body)
	if err != nil {
		col := start + 1
		var pe *expr.ParseError
		if errors.As(err, &pe) {
			col = start + pe.Pos
		}
		return Query{}, &SyntaxError{Source: source, Line: line, Column: col, Msg: filterMessage(err), Err: err}
	}
	return Query{Filter: e.String(), Weight: weight, Line: line, expr: e}, nil
}

// filterMessage is a parse error's message without its "expr: at N: " prefix
// (the SyntaxError says where).
func filterMessage(err error) string {
	m := strings.TrimPrefix(err.Error(), "expr: ")
	if strings.HasPrefix(m, "at ") {
		if i := strings.Index(m, ": "); i > 0 {
			m = m[i+2:]
		}
	}
	return m
}

// weightPrefix recognises a leading "NUMBER:" (spaces allowed around the number)
// and returns the length of the prefix including the colon.
func weightPrefix(text string) (n int, w float64, ok bool) {
	i := leadingSpace(text)
	j := i
	for j < len(text) && (text[j] >= '0' && text[j] <= '9' || text[j] == '.' || text[j] == 'e' || text[j] == 'E' ||
		(j > i && (text[j] == '+' || text[j] == '-') && (text[j-1] == 'e' || text[j-1] == 'E'))) {
		j++
	}
	if j == i || text[i] < '0' && text[i] != '.' || text[i] > '9' {
		return 0, 0, false
	}
	k := j
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	if k >= len(text) || text[k] != ':' {
		return 0, 0, false
	}
	v, err := strconv.ParseFloat(text[i:j], 64)
	if err != nil {
		return k + 1, math.NaN(), true
	}
	return k + 1, v, true
}

func leadingSpace(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// Format writes w in the file format: one canonical filter per line, prefixed
// with its weight unless the weight is 1 (W1: Parse reads it back equal).
func (w *Workload) Format(out io.Writer) error {
	bw := bufio.NewWriter(out)
	for _, q := range w.Queries {
		if q.Weight != 1 {
			bw.WriteString(strconv.FormatFloat(q.Weight, 'g', -1, 64))
			bw.WriteString(": ")
		}
		bw.WriteString(q.Filter)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Fingerprint is a short hash of the workload's canonical text (filters and
// weights, in order): equal fingerprints mean the same workload.
func (w *Workload) Fingerprint() string {
	h := sha256.New()
	for _, q := range w.Queries {
		fmt.Fprintf(h, "%s\x00%s\n", strconv.FormatFloat(q.Weight, 'g', -1, 64), q.Filter)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Bind binds every filter to schema. Errors wrap ErrBind and name the filter's
// line.
func (w *Workload) Bind(schema *arrow.Schema) ([]*expr.Bound, error) {
	out := make([]*expr.Bound, len(w.Queries))
	for i, q := range w.Queries {
		e := q.expr
		if e == nil {
			var err error
			if e, err = expr.Parse(q.Filter); err != nil {
				return nil, fmt.Errorf("%w: query %d %q: %w", ErrBind, i+1, q.Filter, err)
			}
		}
		b, err := expr.Bind(e, schema)
		if err != nil {
			where := fmt.Sprintf("query %d", i+1)
			if q.Line > 0 {
				where = fmt.Sprintf("line %d", q.Line)
			}
			return nil, fmt.Errorf("%w: %s %q: %w", ErrBind, where, q.Filter, err)
		}
		out[i] = b
	}
	return out, nil
}

// ColumnUse is how much of a workload's weight filters on one column.
type ColumnUse struct {
	// Column is the column's top-level name as the filters spell it (first use).
	Column string `json:"column"`
	// Weight is the total weight of the queries that reference the column.
	Weight float64 `json:"weight"`
	// Queries is the number of queries that reference it.
	Queries int `json:"queries"`
}

// Columns returns the top-level columns the filters reference, by decreasing
// weight (ties by name). Names are matched case-insensitively.
func (w *Workload) Columns() []ColumnUse {
	idx := map[string]int{}
	var out []ColumnUse
	for _, q := range w.Queries {
		seen := map[string]bool{}
		walkColumns(q.Expr(), func(name string) {
			k := strings.ToLower(name)
			if seen[k] {
				return
			}
			seen[k] = true
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, ColumnUse{Column: name})
			}
			out[i].Weight += q.Weight
			out[i].Queries++
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Weight != out[j].Weight {
			return out[i].Weight > out[j].Weight
		}
		return out[i].Column < out[j].Column
	})
	return out
}

// walkColumns calls fn with the top-level name of every column e references.
func walkColumns(e expr.Expr, fn func(string)) {
	switch x := e.(type) {
	case *expr.ColumnRef:
		if len(x.Path) > 0 {
			fn(x.Path[0])
		}
	case *expr.Comparison:
		walkColumns(x.Left, fn)
		walkColumns(x.Right, fn)
	case *expr.BetweenExpr:
		walkColumns(x.Value, fn)
		walkColumns(x.Low, fn)
		walkColumns(x.High, fn)
	case *expr.InExpr:
		walkColumns(x.Value, fn)
		for _, l := range x.List {
			walkColumns(l, fn)
		}
	case *expr.IsNullExpr:
		walkColumns(x.Value, fn)
	case *expr.LikeExpr:
		walkColumns(x.Value, fn)
	case *expr.AndExpr:
		for _, t := range x.Terms {
			walkColumns(t, fn)
		}
	case *expr.OrExpr:
		for _, t := range x.Terms {
			walkColumns(t, fn)
		}
	case *expr.NotExpr:
		walkColumns(x.Term, fn)
	}
}
