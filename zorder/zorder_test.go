package zorder

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func equalBits(cols, bits int) []int {
	bs := make([]int, cols)
	for i := range bs {
		bs[i] = bits
	}
	return bs
}

func TestReferenceKnownKeys(t *testing.T) {
	tests := []struct {
		name  string
		bits  []int
		ranks []uint32
		want  Key
	}{
		{"one column is the identity", []int{5}, []uint32{19}, Key{0, 19}},
		{"column 0 owns the top bit", []int{1, 1}, []uint32{1, 0}, Key{0, 0b10}},
		{"column 1 owns the lower bit", []int{1, 1}, []uint32{0, 1}, Key{0, 0b01}},
		{"two columns interleave MSB first", []int{2, 2}, []uint32{0b10, 0b01}, Key{0, 0b1001}},
		{"three columns of 2 bits", []int{2, 2, 2}, []uint32{0b11, 0b00, 0b01}, Key{0, 0b100101}},
		{"unequal bits align at the MSB", []int{2, 1}, []uint32{0b11, 0b1}, Key{0, 0b111}},
		{"unequal bits: coarse column drops out of low levels", []int{3, 1}, []uint32{0b010, 0b1}, Key{0, 0b0110}},
		{"all ones in 128 bits", equalBits(4, 32), []uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, Key{^uint64(0), ^uint64(0)}},
		{"top bit of a 128-bit key is column 0", equalBits(8, 16), []uint32{1 << 15, 0, 0, 0, 0, 0, 0, 0}, Key{1 << 63, 0}},
		{"bottom bit of a 128-bit key is the last column", equalBits(8, 16), []uint32{0, 0, 0, 0, 0, 0, 0, 1}, Key{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReferenceEncode(tt.bits, tt.ranks)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ReferenceEncode = %s, want %s", got, tt.want)
			}
			back := make([]uint32, len(tt.bits))
			if err := ReferenceDecode(tt.bits, got, back); err != nil {
				t.Fatal(err)
			}
			for c := range back {
				if back[c] != tt.ranks[c] {
					t.Fatalf("ReferenceDecode = %v, want %v", back, tt.ranks)
				}
			}
		})
	}
}

// forEachPoint calls fn for every point of cols columns with bits bits each.
func forEachPoint(cols, bits int, fn func(p []uint32)) {
	p := make([]uint32, cols)
	total := uint64(1) << uint(cols*bits)
	mask := uint64(1)<<uint(bits) - 1
	for v := uint64(0); v < total; v++ {
		for c := range p {
			p[c] = uint32(v >> uint(c*bits) & mask)
		}
		fn(p)
	}
}

// TestFastMatchesReferenceExhaustive proves Z2 and Z3 on every point of small
// layouts, and that the keys are a bijection onto [0, 2^total).
func TestFastMatchesReferenceExhaustive(t *testing.T) {
	layouts := [][2]int{{1, 8}, {2, 8}, {3, 5}, {4, 4}, {5, 3}, {6, 2}, {7, 2}, {8, 2}}
	for _, l := range layouts {
		cols, bits := l[0], l[1]
		e, err := NewEncoder(cols, bits)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, 1<<uint(cols*bits))
		back := make([]uint32, cols)
		forEachPoint(cols, bits, func(p []uint32) {
			ref, err := ReferenceEncode(equalBits(cols, bits), p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != ref {
				t.Fatalf("cols=%d bits=%d %v: fast %s, reference %s", cols, bits, p, got, ref)
			}
			k64, err := e.Encode64(p)
			if err != nil || k64 != ref[1] {
				t.Fatalf("Encode64 %v = %d, %v; want %d", p, k64, err, ref[1])
			}
			if seen[ref[1]] {
				t.Fatalf("cols=%d bits=%d: key %d produced twice", cols, bits, ref[1])
			}
			seen[ref[1]] = true
			if err := e.Decode(got, back); err != nil {
				t.Fatal(err)
			}
			for c := range p {
				if back[c] != p[c] {
					t.Fatalf("Decode(%s) = %v, want %v", got, back, p)
				}
			}
		})
	}
}

// TestUnequalBitsRoundTrip checks the reference's unequal-bit layouts are a
// bijection as well.
func TestUnequalBitsRoundTrip(t *testing.T) {
	for _, bits := range [][]int{{3, 1}, {1, 3}, {2, 3, 1}, {4, 2, 2}, {1, 1, 1, 5}} {
		total := 0
		for _, b := range bits {
			total += b
		}
		seen := map[Key]bool{}
		p := make([]uint32, len(bits))
		back := make([]uint32, len(bits))
		var rec func(c int)
		rec = func(c int) {
			if c == len(bits) {
				k, err := ReferenceEncode(bits, p)
				if err != nil {
					t.Fatal(err)
				}
				if k[1] >= 1<<uint(total) || seen[k] {
					t.Fatalf("bits %v point %v: key %s out of range or repeated", bits, p, k)
				}
				seen[k] = true
				if err := ReferenceDecode(bits, k, back); err != nil {
					t.Fatal(err)
				}
				for i := range p {
					if back[i] != p[i] {
						t.Fatalf("bits %v: decode(%s) = %v, want %v", bits, k, back, p)
					}
				}
				return
			}
			for v := uint32(0); v < 1<<uint(bits[c]); v++ {
				p[c] = v
				rec(c + 1)
			}
		}
		rec(0)
		if len(seen) != 1<<uint(total) {
			t.Fatalf("bits %v: %d keys, want %d", bits, len(seen), 1<<uint(total))
		}
	}
}

// TestRandomWideLayouts compares fast and reference on every layout, wide ones
// included, at random points, through the single and the batch API.
func TestRandomWideLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows = 200
	for cols := 1; cols <= MaxColumns; cols++ {
		for bits := 1; bits <= MaxBitsPerColumn && cols*bits <= MaxKeyBits; bits++ {
			e, err := NewEncoder(cols, bits)
			if err != nil {
				t.Fatal(err)
			}
			in := make([][]uint32, cols)
			for c := range in {
				in[c] = make([]uint32, rows)
				for i := range in[c] {
					in[c][i] = uint32(rng.Uint64() & (1<<uint(bits) - 1))
				}
			}
			keys := make([]Key, rows)
			if err := e.EncodeBatch(in, keys); err != nil {
				t.Fatal(err)
			}
			var k64 []uint64
			if cols*bits <= 64 {
				k64 = make([]uint64, rows)
				if err := e.EncodeBatch64(in, k64); err != nil {
					t.Fatal(err)
				}
			}
			p := make([]uint32, cols)
			back := make([]uint32, cols)
			for i := 0; i < rows; i++ {
				for c := range p {
					p[c] = in[c][i]
				}
				ref, err := ReferenceEncode(equalBits(cols, bits), p)
				if err != nil {
					t.Fatal(err)
				}
				if keys[i] != ref {
					t.Fatalf("cols=%d bits=%d row %d %v: batch %s, reference %s", cols, bits, i, p, keys[i], ref)
				}
				if k64 != nil && k64[i] != ref[1] {
					t.Fatalf("cols=%d bits=%d row %d: batch64 %x, reference %s", cols, bits, i, k64[i], ref)
				}
				if one, _ := e.Encode(p); one != ref {
					t.Fatalf("cols=%d bits=%d: Encode %s, reference %s", cols, bits, one, ref)
				}
				if err := e.Decode(ref, back); err != nil {
					t.Fatal(err)
				}
				for c := range p {
					if back[c] != p[c] {
						t.Fatalf("cols=%d bits=%d: Decode(%s) = %v, want %v", cols, bits, ref, back, p)
					}
				}
			}
		}
	}
}

// TestDominanceOrder checks Z1: raising any one rank never lowers the key.
func TestDominanceOrder(t *testing.T) {
	e, err := NewEncoder(3, 4)
	if err != nil {
		t.Fatal(err)
	}
	forEachPoint(3, 4, func(p []uint32) {
		k, _ := e.Encode(p)
		for c := range p {
			if p[c] == 15 {
				continue
			}
			q := append([]uint32(nil), p...)
			q[c]++
			k2, _ := e.Encode(q)
			if k2.Compare(k) <= 0 {
				t.Fatalf("raising column %d of %v gave key %s ≤ %s", c, p, k2, k)
			}
		}
	})
}

func TestKeyOrderMatchesBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1000; i++ {
		a := Key{rng.Uint64() & 3, rng.Uint64() & 7}
		b := Key{rng.Uint64() & 3, rng.Uint64() & 7}
		ab, bb := a.Bytes(), b.Bytes()
		if got, want := a.Compare(b), bytes.Compare(ab[:], bb[:]); got != want {
			t.Fatalf("Compare(%s,%s)=%d, bytes.Compare=%d", a, b, got, want)
		}
		if a.Less(b) != (a.Compare(b) < 0) {
			t.Fatalf("Less disagrees with Compare for %s, %s", a, b)
		}
		if KeyFromBytes(ab) != a {
			t.Fatalf("KeyFromBytes(Bytes(%s)) differs", a)
		}
	}
}

func TestErrors(t *testing.T) {
	e4, _ := NewEncoder(4, 8)
	wide, _ := NewEncoder(8, 16)
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"zero columns", func() error { _, err := NewEncoder(0, 8); return err }, ErrLayout},
		{"nine columns", func() error { _, err := NewEncoder(9, 8); return err }, ErrLayout},
		{"zero bits", func() error { _, err := NewEncoder(2, 0); return err }, ErrLayout},
		{"33 bits", func() error { _, err := NewEncoder(1, 33); return err }, ErrLayout},
		{"more than 128 key bits", func() error { _, err := NewEncoder(5, 26); return err }, ErrLayout},
		{"reference: more than 128 key bits", func() error { _, err := ReferenceEncode([]int{32, 32, 32, 32, 1}, make([]uint32, 5)); return err }, ErrLayout},
		{"wrong rank count", func() error { _, err := e4.Encode([]uint32{1, 2, 3}); return err }, ErrShape},
		{"rank needs 9 bits", func() error { _, err := e4.Encode([]uint32{1, 256, 3, 4}); return err }, ErrRankRange},
		{"reference rank too big", func() error { _, err := ReferenceEncode([]int{2, 2}, []uint32{4, 0}); return err }, ErrRankRange},
		{"64-bit API on a 128-bit layout", func() error { _, err := wide.Encode64(make([]uint32, 8)); return err }, ErrKeyTooWide},
		{"batch64 on a 128-bit layout", func() error { return wide.EncodeBatch64(make([][]uint32, 8), nil) }, ErrKeyTooWide},
		{"batch with a short column", func() error {
			return e4.EncodeBatch64([][]uint32{{1}, {1}, {1}, {}}, make([]uint64, 1))
		}, ErrShape},
		{"batch with a rank too big", func() error {
			return e4.EncodeBatch([][]uint32{{1, 2}, {1, 2}, {1, 999}, {1, 2}}, make([]Key, 2))
		}, ErrRankRange},
		{"batch64 with a rank too big", func() error {
			return e4.EncodeBatch64([][]uint32{{1, 2}, {1, 2}, {1, 999}, {1, 2}}, make([]uint64, 2))
		}, ErrRankRange},
		{"decode a key with bits above the layout", func() error { return e4.Decode(Key{0, 1 << 40}, make([]uint32, 4)) }, ErrRankRange},
		{"reference decode a key with bits above the layout", func() error { return ReferenceDecode([]int{2, 2}, Key{1, 0}, make([]uint32, 2)) }, ErrRankRange},
		{"decode into a short slice", func() error { return e4.Decode(Key{}, make([]uint32, 3)) }, ErrShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if err.Error()[:8] != "zorder: " {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
}

func FuzzMortonMatchesReference(f *testing.F) {
	f.Add(uint8(2), uint8(16), uint64(0x1234), uint64(0xffff0000ffff))
	f.Add(uint8(3), uint8(21), uint64(0), ^uint64(0))
	f.Add(uint8(8), uint8(16), ^uint64(0), uint64(1))
	f.Add(uint8(5), uint8(25), uint64(42), uint64(7))
	f.Add(uint8(3), uint8(32), ^uint64(0), ^uint64(0))
	f.Fuzz(func(t *testing.T, c, b uint8, s1, s2 uint64) {
		cols := int(c)%MaxColumns + 1
		bits := int(b)%MaxBitsPerColumn + 1
		if cols*bits > MaxKeyBits {
			bits = MaxKeyBits / cols
		}
		rng := rand.New(rand.NewPCG(s1, s2))
		p := make([]uint32, cols)
		for i := range p {
			p[i] = uint32(rng.Uint64() & (1<<uint(bits) - 1))
		}
		e, err := NewEncoder(cols, bits)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ReferenceEncode(equalBits(cols, bits), p)
		if err != nil {
			t.Fatal(err)
		}
		if got != ref {
			t.Fatalf("cols=%d bits=%d %v: fast %s, reference %s", cols, bits, p, got, ref)
		}
		back := make([]uint32, cols)
		if err := e.Decode(got, back); err != nil {
			t.Fatal(err)
		}
		for i := range p {
			if back[i] != p[i] {
				t.Fatalf("Decode(%s) = %v, want %v", got, back, p)
			}
		}
	})
}
