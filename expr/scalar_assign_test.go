package expr

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

func assignSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "small", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "ratio", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	}, nil)
}

func assignRecord(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, assignSchema())
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4}, nil)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{10, 300, 0, 5}, []bool{true, true, false, true})
	b.Field(2).(*array.Int8Builder).AppendValues([]int8{1, 2, 3, 127}, nil)
	for _, p := range []int64{1999, 250, 0, 100} {
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(p))
	}
	b.Field(4).(*array.Float64Builder).AppendValues([]float64{0.5, 1, 2, 4}, nil)
	b.Field(5).(*array.LargeStringBuilder).AppendValues([]string{"a", "b", "", "d"}, []bool{true, true, false, true})
	b.Field(6).(*array.Date32Builder).AppendValues([]arrow.Date32{19000, 19001, 19002, 19003}, nil)
	b.Field(7).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{0, 1, 2, 3}, nil)
	lb := b.Field(8).(*array.ListBuilder)
	for range 4 {
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("t")
	}
	sb := b.Field(9).(*array.StructBuilder)
	for i := range 4 {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
	}
	return b.NewRecordBatch()
}

func selOf(n int, rows ...int) *Selection {
	s := NewSelection(n, false)
	for _, r := range rows {
		s.words[r>>6] |= 1 << (uint(r) & 63)
	}
	return s
}

func colStrings(arr arrow.Array) []string {
	out := make([]string, arr.Len())
	for i := range out {
		out[i] = arr.ValueStr(i)
	}
	return out
}

func TestApplyUpdatesSelectedRowsFromOldValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := assignRecord(t, mem)
	defer rec.Release()
	as, err := ParseAssignments("qty = small, small = CAST(qty % 100 AS byte), price = price * 2, name = name || '!', " +
		"day = DATE '2024-01-01', at = day, ratio = qty")
	if err != nil {
		t.Fatal(err)
	}
	b, err := BindAssignments(as, rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Fields(); len(got) != 7 || got[0] != 1 || got[6] != 4 {
		t.Fatalf("Fields() = %v", got)
	}
	out, err := b.Apply(rec, selOf(4, 0, 1, 2), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	want := map[string][]string{
		"qty":   {"1", "2", "3", "5"},         // from small (old value), row 3 unselected
		"small": {"10", "0", "(null)", "127"}, // from old qty: 300 % 100 = 0; NULL stays NULL
		"price": {"39.98", "5", "0", "1"},     // decimal(10,2) printed without trailing zeros
		"name":  {"a!", "b!", "(null)", "d"},  // NULL || '!' is NULL
		"day":   {"2024-01-01", "2024-01-01", "2024-01-01", "2022-01-11"},
		"ratio": {"10", "300", "(null)", "4"},
	}
	for name, w := range want {
		got := colStrings(out.Column(out.Schema().FieldIndices(name)[0]))
		if strings.Join(got, ",") != strings.Join(w, ",") {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	at := out.Column(7).(*array.Timestamp)
	if at.Value(0) != arrow.Timestamp(19000*microsPerDay) || at.Value(3) != 3 {
		t.Errorf("at = %v", colStrings(at))
	}
	for _, i := range []int{0, 8, 9} {
		if out.Column(i) != rec.Column(i) {
			t.Errorf("unassigned column %d was copied, not shared", i)
		}
	}
	if !arrow.TypeEqual(out.Column(5).DataType(), arrow.BinaryTypes.LargeString) {
		t.Errorf("name has type %s", out.Column(5).DataType())
	}

	all, err := b.Apply(rec, nil, mem) // every row, row 3 included
	if err != nil {
		t.Fatal(err)
	}
	defer all.Release()
	if got := colStrings(all.Column(1)); strings.Join(got, ",") != "1,2,3,127" {
		t.Errorf("qty with a nil selection = %v", got)
	}
}

func TestApplyErrorsNameTheRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := assignRecord(t, mem)
	defer rec.Release()
	cases := []struct {
		set  string
		sel  *Selection
		want error
		row  int
	}{
		{"small = qty", selOf(4, 0, 1), ErrOverflow, 1},               // 300 does not fit a byte
		{"small = qty", selOf(4, 0, 3), nil, 0},                       // ... but row 1 is not updated
		{"id = qty", selOf(4, 2), ErrNotNullable, 2},                  // qty is NULL in row 2
		{"id = qty", selOf(4, 0, 1, 3), nil, 0},                       //
		{"qty = qty * 10000000", nil, ErrOverflow, 1},                 // integer overflow in row 1
		{"ratio = id * 9007199254740993", selOf(4, 0), ErrInexact, 0}, // 2^53+1 is not a double
		{"ratio = id * 9007199254740993", selOf(4, 1), ErrInexact, 1}, // 2^54+2 is not a double either
		{"ratio = id * 9007199254740993", selOf(4, 3), ErrInexact, 3},
		{"qty = id * 9007199254740993", selOf(4, 3), ErrOverflow, 3},
		{"price = price * 100000000", selOf(4, 0), ErrOverflow, 0}, // decimal(10,2) overflow
	}
	for _, c := range cases {
		t.Run(c.set, func(t *testing.T) {
			as, err := ParseAssignments(c.set)
			if err != nil {
				t.Fatal(err)
			}
			b, err := BindAssignments(as, rec.Schema())
			if err != nil {
				t.Fatal(err)
			}
			out, err := b.Apply(rec, c.sel, mem)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				out.Release()
				return
			}
			var ee *EvalError
			if !errors.Is(err, c.want) || !errors.As(err, &ee) || ee.Row != c.row {
				t.Fatalf("got %v, want %v at row %d", err, c.want, c.row)
			}
			if out != nil {
				t.Fatal("a record was returned with the error")
			}
		})
	}
}

func TestBindAssignmentsErrorsNameColumnAndPosition(t *testing.T) {
	sc := assignSchema()
	cases := []struct {
		set  string
		pos  int
		col  string
		want error
		msg  string
	}{
		{"qty = 1, nosuch = 2", 10, "nosuch", ErrUnknownColumn, `unknown column "nosuch"`},
		{"qty = 1, QTY = 2", 10, "QTY", ErrInvalidExpr, "assigned twice"},
		{"st.x = 1", 1, "st.x", ErrInvalidExpr, "nested field"},
		{"tags = NULL", 1, "tags", ErrUnsupportedType, "array<string>"},
		{"small = 300", 1, "small", ErrType, "300 does not fit tinyint"},
		{"qty = 1.5", 1, "qty", ErrType, "1.5 does not fit int"},
		{"qty = 'abc'", 1, "qty", ErrType, "cannot assign 'abc'"},
		{"id = NULL", 1, "id", ErrNotNullable, "NULL assigned"},
		{"qty = ratio", 1, "qty", ErrType, "cannot assign double to a column of type int without CAST (write CAST(ratio AS int))"},
		{"price = ratio * 2", 1, "price", ErrType, "cannot assign double to a column of type decimal(10,2) without CAST (write CAST(ratio * 2 AS decimal(10,2)))"},
		{"name = qty", 1, "name", ErrType, "cannot assign int to a column of type string"},
		{"day = at", 1, "day", ErrType, "cannot assign timestamp to a column of type date"},
		{"ratio = price", 1, "ratio", ErrType, "cannot assign decimal(10,2) to a column of type double"},
		{"qty = name + 1", 1, "qty", ErrType, "string is not a number"},
	}
	for _, c := range cases {
		t.Run(c.set, func(t *testing.T) {
			as, err := ParseAssignments(c.set)
			if err != nil {
				t.Fatal(err)
			}
			_, err = BindAssignments(as, sc)
			var ae *AssignmentError
			if !errors.As(err, &ae) || ae.Pos != c.pos || ae.Column != c.col || !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want an AssignmentError at %d for %s wrapping %v with %q", err, c.pos, c.col, c.want, c.msg)
			}
		})
	}
	if _, err := BindAssignments(nil, sc); !errors.Is(err, ErrInvalidExpr) {
		t.Fatalf("empty list: %v", err)
	}
}

func TestBindAssignmentsLiterals(t *testing.T) {
	sc := assignSchema()
	cases := []struct{ set, want string }{
		{"small = -128", "small = -128"},
		{"price = 12.5", "price = 12.50"},
		{"price = 3", "price = 3.00"},
		{"ratio = 0.1", "ratio = 1e-01"},
		{"day = '2024-02-29'", "day = DATE '2024-02-29'"},
		{"at = '2024-02-29 10:00:00+02:00'", "at = TIMESTAMP '2024-02-29 08:00:00+00:00'"},
		{"qty = NULL", "qty = NULL"},
		{"name = 'x'", "name = 'x'"},
		{"qty = small + 1", "qty = (CAST(small AS int) + 1)"},
		{"small = small + 1", "small = CAST((CAST(small AS int) + 1) AS tinyint)"},
		{"price = qty", "price = CAST(qty AS decimal(10,2))"},
		{"price = price / 3", "price = CAST((price / 3) AS decimal(10,2))"},
	}
	for _, c := range cases {
		as, err := ParseAssignments(c.set)
		if err != nil {
			t.Fatal(err)
		}
		b, err := BindAssignments(as, sc)
		if err != nil {
			t.Fatalf("%s: %v", c.set, err)
		}
		if got := b.String(); got != c.want {
			t.Errorf("%s bound as %q, want %q", c.set, got, c.want)
		}
	}
}

// TestApplyMatchesOracle: random assignable expressions for every column; Apply's result
// equals the row oracle of the bound value on selected rows and the old value elsewhere.
func TestApplyMatchesOracle(t *testing.T) {
	sc := evalSchema()
	cols := leafColumns(sc)
	r := rand.New(rand.NewPCG(9, 10))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := randomRows(r, sc, 150)
	rec := buildRecord(mem, sc, rows)
	defer rec.Release()
	n := propertyRounds(1500, 300)
	applied := 0
	for range n {
		fi := r.IntN(sc.NumFields())
		if _, ok := sc.Field(fi).Type.(*arrow.StructType); ok {
			continue
		}
		a := Assignment{Column: Col(sc.Field(fi).Name), Value: randomScalar(r, cols, 2)}
		b, err := BindAssignments([]Assignment{a}, sc)
		if err != nil {
			continue
		}
		sel := randomSelection(r, int(rec.NumRows()))
		out, err := b.Apply(rec, sel, mem)
		if err != nil {
			if sentinelOf(err) == nil {
				t.Fatalf("%s: %v", a, err)
			}
			continue
		}
		applied++
		bs := b.Value(0)
		for i := range int(rec.NumRows()) {
			got := resultValue(out.Column(fi), i, sc.Field(fi).Type)
			want := resultValue(rec.Column(fi), i, sc.Field(fi).Type)
			if sel == nil || sel.Contains(i) {
				vals, err := bs.RowValues(rec, i)
				if err != nil {
					t.Fatal(err)
				}
				if want, err = bs.EvaluateRow(vals); err != nil {
					t.Fatalf("%s row %d: Apply succeeded, oracle %v", a, i, err)
				}
			}
			if !sameValue(got, want) {
				t.Fatalf("%s (bound %s) row %d: got %s, want %s", a, b, i, show(got), show(want))
			}
		}
		out.Release()
	}
	t.Logf("%d of %d random assignments applied", applied, n)
	if applied < n/20 {
		t.Fatalf("only %d of %d random assignments applied", applied, n)
	}
}

var _ = math.MaxInt8
var _ = value.Null
