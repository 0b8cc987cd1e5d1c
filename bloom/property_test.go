package bloom

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/skiplake/skiplake/value"
)

// genFor returns a random value generator for a kind; equivalents lists other
// literals that equal v after coercion and must therefore also test positive.
type generator struct {
	kind        value.Kind
	gen         func(r *rand.Rand) value.Value
	equivalents func(v value.Value) []value.Value
}

func generators() []generator {
	none := func(value.Value) []value.Value { return nil }
	return []generator{
		{value.KindInt64, func(r *rand.Rand) value.Value { return value.Int64(int64(r.Uint64())) }, none},
		{value.KindDate, func(r *rand.Rand) value.Value { return value.Date(r.Int64N(100_000) - 50_000) }, none},
		{value.KindTimestamp, func(r *rand.Rand) value.Value { return value.Timestamp(int64(r.Uint64() >> 2)) }, none},
		{value.KindTimestampNTZ, func(r *rand.Rand) value.Value { return value.TimestampNTZ(-int64(r.Uint64() >> 2)) }, none},
		{value.KindFloat64, func(r *rand.Rand) value.Value {
			switch r.IntN(10) {
			case 0:
				return value.Float64(math.Copysign(0, -1))
			case 1:
				return value.Float64(math.Float64frombits(0x7ff0000000000000 | (r.Uint64() & 0xfffffffffffff) | 1))
			case 2:
				return value.Float64(math.Inf(1 - 2*r.IntN(2)))
			}
			return value.Float64(r.NormFloat64() * 1e6)
		}, func(v value.Value) []value.Value {
			f := v.AsFloat64()
			switch {
			case f != f:
				return []value.Value{value.Float64(math.NaN()), value.Float64(math.Float64frombits(0xfff8000000000123))}
			case f == 0:
				return []value.Value{value.Float64(0), value.Float64(math.Copysign(0, -1))}
			}
			return nil
		}},
		{value.KindDecimal, func(r *rand.Rand) value.Value {
			return value.Decimal(decimal128.New(int64(r.Uint64())>>r.IntN(64), r.Uint64()), 38, 4)
		}, func(v value.Value) []value.Value {
			n, p, s := v.AsDecimal()
			out := []value.Value{}
			if up, ok := rescaleExact(n, s, s+3); ok { // 1.5000 == 1.5000000
				out = append(out, value.Decimal(up, p, s+3))
			}
			if down, ok := rescaleExact(n, s, s-2); ok { // 1.2300 == 1.23
				out = append(out, value.Decimal(down, p, s-2))
			}
			return out
		}},
		{value.KindString, func(r *rand.Rand) value.Value {
			b := make([]byte, r.IntN(40))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return value.String(string(b))
		}, none},
		{value.KindBinary, func(r *rand.Rand) value.Value {
			b := make([]byte, r.IntN(20))
			for i := range b {
				b[i] = byte(r.IntN(4))
			}
			return value.Binary(b)
		}, none},
		{value.KindBool, func(r *rand.Rand) value.Value { return value.Bool(r.IntN(2) == 1) }, none},
	}
}

// TestNoFalseNegatives (B2): every added value, and every literal equal to it after
// coercion, tests positive after the filter goes through an index file round trip.
func TestNoFalseNegatives(t *testing.T) {
	files, rows := 20, 2000
	if testing.Short() {
		files, rows = 5, 500
	}
	for _, g := range generators() {
		t.Run(g.kind.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(g.kind), 42))
			var entries []Entry
			added := make([][]value.Value, files)
			for fi := 0; fi < files; fi++ {
				b, err := NewBuilder("c", 0, []float64{0.01, 0.1, 0.001}[fi%3])
				if err != nil {
					t.Fatal(err)
				}
				n := r.IntN(rows) + 1
				for i := 0; i < n; i++ {
					v := g.gen(r)
					if err := b.Add(v); err != nil {
						t.Fatal(err)
					}
					added[fi] = append(added[fi], v)
				}
				entries = append(entries, Entry{DataPath: "part-" + strconv.Itoa(fi) + ".parquet", Filter: mustFinish(t, b)})
			}
			data, err := MarshalIndex(entries...)
			if err != nil {
				t.Fatal(err)
			}
			ix, err := ReadIndex(data)
			if err != nil {
				t.Fatal(err)
			}
			for fi, vals := range added {
				f, ok := ix.Filter("part-"+strconv.Itoa(fi)+".parquet", "c")
				if !ok {
					t.Fatalf("file %d missing from index", fi)
				}
				for _, v := range vals {
					p := NewProbe(v)
					if !f.MightContain(v) || !f.MightContainProbe(&p) || !ProbeAny(f, []value.Value{value.Null(), v}) {
						t.Fatalf("file %d: false negative for %v", fi, v)
					}
					for _, eq := range g.equivalents(v) {
						if !f.MightContain(eq) {
							t.Fatalf("file %d: false negative for %v (equal to added %v)", fi, eq, v)
						}
					}
				}
			}
		})
	}
}

// TestFalsePositiveRate measures the false-positive rate over absent probes and
// compares it to the theoretical rate of the filter's actual m and k (which is the
// configured rate up to rounding of m and k). Deterministic seed. Set
// SKIPLAKE_BLOOM_FP_PROBES to probe more.
func TestFalsePositiveRate(t *testing.T) {
	probes := 200_000
	if testing.Short() {
		probes = 100_000
	}
	if s := os.Getenv("SKIPLAKE_BLOOM_FP_PROBES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SKIPLAKE_BLOOM_FP_PROBES=%q", s)
		}
		probes = n
	}
	ints := func(i int) value.Value { return value.Int64(int64(2 * i)) } // even: present
	oddInts := func(r *rand.Rand) value.Value { return value.Int64(2*r.Int64N(1<<40) + 1) }
	uuidOf := func(hi, lo uint64) value.Value {
		return value.String(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", hi>>32, hi>>16&0xffff, hi&0xfff, lo>>52, lo&0xffffffffffff))
	}
	uuids := func(i int) value.Value { return uuidOf(uint64(i)*0x9e3779b97f4a7c15, uint64(i)<<1) } // even lo: present
	otherUUIDs := func(r *rand.Rand) value.Value { return uuidOf(r.Uint64(), r.Uint64()|1) }
	for _, tc := range []struct {
		name    string
		n       int
		fpp     float64
		present func(i int) value.Value
		absent  func(r *rand.Rand) value.Value
	}{
		{"ints/n=10000/fpp=0.01", 10_000, 0.01, ints, oddInts},
		{"ints/n=50000/fpp=0.01", 50_000, 0.01, ints, oddInts},
		{"uuids/n=20000/fpp=0.01", 20_000, 0.01, uuids, otherUUIDs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBuilder("id", uint(tc.n), tc.fpp)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.n; i++ {
				_ = b.Add(tc.present(i))
			}
			f := mustFinish(t, b)
			theory := f.EstimatedFPP()
			if math.Abs(theory-tc.fpp) > 0.05*tc.fpp {
				t.Errorf("sizing: theoretical rate %.5f of m=%d k=%d far from configured %.5f", theory, f.Bits(), f.K(), tc.fpp)
			}
			r := rand.New(rand.NewPCG(7, uint64(tc.n)))
			fp := 0
			for i := 0; i < probes; i++ {
				if f.MightContain(tc.absent(r)) {
					fp++
				}
			}
			rate := float64(fp) / float64(probes)
			t.Logf("m=%d k=%d n=%d: measured FP %.5f over %d absent probes, theoretical %.5f, configured %.3f",
				f.Bits(), f.K(), tc.n, rate, probes, theory, tc.fpp)
			if math.Abs(rate-theory) > 0.15*theory {
				t.Fatalf("measured FP %.5f outside ±15%% of theoretical %.5f", rate, theory)
			}
		})
	}
}

func TestProbeKindRules(t *testing.T) {
	b := mustBuilder(t, "d")
	_ = b.Add(value.Decimal(decimal128.FromI64(150), 10, 2)) // 1.50
	dec := mustFinish(t, b)
	tests := []struct {
		name string
		f    *Filter
		v    value.Value
		want bool
	}{
		{"decimal at the column scale is found", dec, value.Decimal(decimal128.FromI64(150), 10, 2), true},
		{"decimal at a finer scale is rescaled", dec, value.Decimal(decimal128.FromI64(15000), 12, 4), true},
		{"decimal at a coarser scale is rescaled", dec, value.Decimal(decimal128.FromI64(15), 10, 1), true},
		{"decimal with digits beyond the scale cannot be present", dec, value.Decimal(decimal128.FromI64(1501), 12, 3), false},
		{"uncoerced int literal gets the conservative answer", dec, value.Int64(999), true},
		{"NULL literal gets the conservative answer", dec, value.Null(), true},
		{"nil filter means not covered", nil, value.Int64(1), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.MightContain(tc.v); got != tc.want {
				t.Fatalf("MightContain(%v) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
	t.Run("empty IN list on a covered file cannot match", func(t *testing.T) {
		if ProbeAny(dec, nil) || dec.MightContainAny(nil) {
			t.Fatal("empty IN list matched")
		}
	})
	t.Run("IN list on an uncovered file is kept", func(t *testing.T) {
		var nilF *Filter
		if !ProbeAny(nil, nil) || !nilF.MightContainAny(nil) {
			t.Fatal("uncovered file skipped")
		}
	})
}

// TestProbePathsAgree: the precomputed path (Probe + TestLocations) and the direct
// path (MightContain) give the same answer for every filter/literal pair, including
// literals of other kinds and decimals at other scales.
func TestProbePathsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gens := generators()
	var filters []*Filter
	var lits []value.Value
	for _, g := range gens {
		b := mustBuilder(t, "c")
		for i := 0; i < 200; i++ {
			v := g.gen(r)
			_ = b.Add(v)
			lits = append(lits, v)
			lits = append(lits, g.equivalents(v)...)
		}
		filters = append(filters, mustFinish(t, b))
	}
	for i := 0; i < 500; i++ {
		lits = append(lits, gens[r.IntN(len(gens))].gen(r))
	}
	for fi, f := range filters {
		for _, v := range lits {
			p := NewProbe(v)
			if a, b := f.MightContain(v), f.MightContainProbe(&p); a != b {
				t.Fatalf("filter %d (%s): MightContain(%v)=%v but probe path %v", fi, f.Kind(), v, a, b)
			}
		}
	}
}
