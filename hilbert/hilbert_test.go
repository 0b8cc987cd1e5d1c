package hilbert

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// smallLayouts are covered exhaustively: every index of the whole space.
var smallLayouts = [][2]int{
	{2, 1}, {2, 4}, {2, 6}, {3, 3}, {3, 4}, {4, 2}, {4, 3}, {5, 2}, {6, 2}, {7, 2}, {8, 1}, {8, 2},
}

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// TestCurvePropertiesExhaustive proves H1, H2, H3 and H4 on every index of the
// small layouts: it walks the indexes in order, decodes each with the fast and
// the reference decoder, checks the step from the previous point, and encodes
// the point back with both encoders.
func TestCurvePropertiesExhaustive(t *testing.T) {
	for _, l := range smallLayouts {
		dims, bits := l[0], l[1]
		t.Run(fmt.Sprintf("dims=%d/bits=%d", dims, bits), func(t *testing.T) {
			c, err := New(dims, bits)
			if err != nil {
				t.Fatal(err)
			}
			n := uint64(1) << uint(dims*bits)
			prev := make([]uint32, dims)
			p := make([]uint32, dims)
			r := make([]uint32, dims)
			seen := map[string]bool{}
			for h := uint64(0); h < n; h++ {
				if err := c.Decode64(h, p); err != nil {
					t.Fatal(err)
				}
				if err := ReferenceDecode(dims, bits, Key{0, h}, r); err != nil {
					t.Fatal(err)
				}
				for i := range p {
					if p[i] != r[i] {
						t.Fatalf("index %d: fast decode %v, reference %v", h, p, r)
					}
				}
				if h == 0 {
					for i := range p {
						if p[i] != 0 {
							t.Fatalf("index 0 decodes to %v, want the origin", p)
						}
					}
				} else {
					var dist int64
					for i := range p {
						dist += abs(int64(p[i]) - int64(prev[i]))
					}
					if dist != 1 {
						t.Fatalf("index %d: %v -> %v is Manhattan distance %d, want 1", h, prev, p, dist)
					}
				}
				key := fmt.Sprint(p)
				if seen[key] {
					t.Fatalf("point %v decoded twice", p)
				}
				seen[key] = true
				got, err := c.Encode64(p)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := ReferenceEncode(dims, bits, p)
				if err != nil {
					t.Fatal(err)
				}
				if got != h || ref != (Key{0, h}) {
					t.Fatalf("point %v: fast %d, reference %s, want %d", p, got, ref, h)
				}
				copy(prev, p)
			}
		})
	}
}

func TestOneDimensionIsIdentity(t *testing.T) {
	for _, bits := range []int{1, 7, 32} {
		c, err := New(1, bits)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []uint32{0, 1, uint32(uint64(1)<<uint(bits) - 1)} {
			k, err := c.Encode([]uint32{v})
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := ReferenceEncode(1, bits, []uint32{v})
			if k != (Key{0, uint64(v)}) || ref != k {
				t.Fatalf("bits=%d: Encode(%d) = %s (reference %s), want the identity", bits, v, k, ref)
			}
		}
	}
}

// TestKnown2D pins the orientation of the 2-D curve of order 1 and 2.
func TestKnown2D(t *testing.T) {
	c, _ := New(2, 1)
	var got []string
	p := make([]uint32, 2)
	for h := uint64(0); h < 4; h++ {
		_ = c.Decode64(h, p)
		got = append(got, fmt.Sprint(p))
	}
	if want := "[0 0] [0 1] [1 1] [1 0]"; strings.Join(got, " ") != want {
		t.Fatalf("order-1 curve %v, want %s", got, want)
	}
}

// TestRandomAllLayouts compares the fast batch and single APIs with the
// reference at random points of every supported layout (H4), wide included.
func TestRandomAllLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rows := 300
	if testing.Short() {
		rows = 60
	}
	for dims := 1; dims <= MaxDims; dims++ {
		for bits := 1; bits <= MaxBits && dims*bits <= MaxKeyBits; bits++ {
			c, err := New(dims, bits)
			if err != nil {
				t.Fatal(err)
			}
			in := make([][]uint32, dims)
			for d := range in {
				in[d] = make([]uint32, rows)
				for i := range in[d] {
					in[d][i] = uint32(rng.Uint64() & (1<<uint(bits) - 1))
				}
			}
			keys := make([]Key, rows)
			if err := c.EncodeBatch(in, keys); err != nil {
				t.Fatal(err)
			}
			var k64 []uint64
			if dims*bits <= 64 {
				k64 = make([]uint64, rows)
				if err := c.EncodeBatch64(in, k64); err != nil {
					t.Fatal(err)
				}
			}
			p := make([]uint32, dims)
			back := make([]uint32, dims)
			for i := 0; i < rows; i++ {
				for d := range p {
					p[d] = in[d][i]
				}
				ref, err := ReferenceEncode(dims, bits, p)
				if err != nil {
					t.Fatal(err)
				}
				one, err := c.Encode(p)
				if err != nil {
					t.Fatal(err)
				}
				if keys[i] != ref || one != ref || (k64 != nil && k64[i] != ref[1]) {
					t.Fatalf("dims=%d bits=%d %v: batch %s single %s, reference %s", dims, bits, p, keys[i], one, ref)
				}
				if err := c.Decode(ref, back); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(back) != fmt.Sprint(p) {
					t.Fatalf("dims=%d bits=%d: Decode(%s) = %v, want %v", dims, bits, ref, back, p)
				}
			}
		}
	}
}

// TestAdjacencyWide checks H2 on random stretches of wide layouts, where the
// exhaustive walk is impossible.
func TestAdjacencyWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, l := range [][2]int{{2, 32}, {3, 21}, {4, 16}, {5, 25}, {6, 21}, {8, 16}} {
		c, err := New(l[0], l[1])
		if err != nil {
			t.Fatal(err)
		}
		total := uint(l[0] * l[1])
		a := make([]uint32, l[0])
		b := make([]uint32, l[0])
		for s := 0; s < 50; s++ {
			k := Key{rng.Uint64(), rng.Uint64()}
			if total < 128 {
				if total <= 64 {
					k = Key{0, k[1] & (1<<total - 1)}
				} else {
					k[0] &= 1<<(total-64) - 1
				}
			}
			if k == (Key{^uint64(0), ^uint64(0)}) || (total <= 64 && k[1] == 1<<total-1) {
				continue
			}
			next := Key{k[0], k[1] + 1}
			if next[1] == 0 {
				next[0]++
			}
			if err := c.Decode(k, a); err != nil {
				t.Fatal(err)
			}
			if err := c.Decode(next, b); err != nil {
				t.Fatal(err)
			}
			var dist int64
			for i := range a {
				dist += abs(int64(a[i]) - int64(b[i]))
			}
			if dist != 1 {
				t.Fatalf("dims=%d bits=%d: %s -> %v, next -> %v: distance %d", l[0], l[1], k, a, b, dist)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	c, _ := New(3, 4)
	c8, _ := New(8, 16)
	c6, _ := New(6, 4)
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"zero dimensions", func() error { _, err := New(0, 4); return err }, ErrLayout},
		{"nine dimensions", func() error { _, err := New(9, 4); return err }, ErrLayout},
		{"zero bits", func() error { _, err := New(2, 0); return err }, ErrLayout},
		{"over 128 bits", func() error { _, err := New(5, 26); return err }, ErrLayout},
		{"reference over 128 bits", func() error { _, err := ReferenceEncode(8, 17, make([]uint32, 8)); return err }, ErrLayout},
		{"wrong coordinate count", func() error { _, err := c.Encode([]uint32{1, 2}); return err }, ErrShape},
		{"coordinate needs 5 bits", func() error { _, err := c.Encode([]uint32{1, 16, 2}); return err }, ErrCoordRange},
		{"loop path coordinate too big", func() error { _, err := c6.Encode([]uint32{1, 1, 1, 1, 1, 99}); return err }, ErrCoordRange},
		{"64-bit API on 128-bit layout", func() error { _, err := c8.Encode64(make([]uint32, 8)); return err }, ErrKeyTooWide},
		{"batch with a coordinate too big", func() error {
			return c.EncodeBatch64([][]uint32{{1}, {1}, {17}}, make([]uint64, 1))
		}, ErrCoordRange},
		{"loop batch with a coordinate too big", func() error {
			return c6.EncodeBatch([][]uint32{{1}, {1}, {1}, {1}, {1}, {17}}, make([]Key, 1))
		}, ErrCoordRange},
		{"batch with a short column", func() error {
			return c.EncodeBatch([][]uint32{{1}, {1}, {}}, make([]Key, 1))
		}, ErrShape},
		{"loop batch with a short column", func() error {
			return c6.EncodeBatch64([][]uint32{{1}, {1}, {1}, {1}, {1}, {}}, make([]uint64, 1))
		}, ErrShape},
		{"decode index above the layout", func() error { return c.Decode64(1<<12, make([]uint32, 3)) }, ErrIndexRange},
		{"loop decode index above the layout", func() error { return c6.Decode64(1<<24, make([]uint32, 6)) }, ErrIndexRange},
		{"reference decode index above the layout", func() error { return ReferenceDecode(3, 4, Key{0, 1 << 12}, make([]uint32, 3)) }, ErrIndexRange},
		{"decode accepts any index of a 128-bit layout", func() error { return c8.Decode(Key{1, 0}, make([]uint32, 8)) }, nil},
		{"decode a 72-bit index with bit 72 set", func() error {
			c9, _ := New(3, 24)
			return c9.Decode(Key{1 << 8, 0}, make([]uint32, 3))
		}, ErrIndexRange},
		{"decode into a short slice", func() error { return c.Decode64(0, make([]uint32, 2)) }, ErrShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "hilbert: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
}

func FuzzHilbertMatchesReference(f *testing.F) {
	f.Add(uint8(4), uint8(16), uint64(1), uint64(2))
	f.Add(uint8(2), uint8(32), ^uint64(0), uint64(0))
	f.Add(uint8(5), uint8(25), uint64(3), uint64(9))
	f.Add(uint8(8), uint8(16), uint64(77), ^uint64(0))
	f.Add(uint8(3), uint8(1), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, d, b uint8, s1, s2 uint64) {
		dims := int(d)%MaxDims + 1
		bits := int(b)%MaxBits + 1
		if dims*bits > MaxKeyBits {
			bits = MaxKeyBits / dims
		}
		rng := rand.New(rand.NewPCG(s1, s2))
		p := make([]uint32, dims)
		for i := range p {
			p[i] = uint32(rng.Uint64() & (1<<uint(bits) - 1))
		}
		c, err := New(dims, bits)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ReferenceEncode(dims, bits, p)
		if err != nil {
			t.Fatal(err)
		}
		if got != ref {
			t.Fatalf("dims=%d bits=%d %v: fast %s, reference %s", dims, bits, p, got, ref)
		}
		back := make([]uint32, dims)
		if err := c.Decode(got, back); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(back) != fmt.Sprint(p) {
			t.Fatalf("Decode(%s) = %v, want %v", got, back, p)
		}
	})
}

// TestConcurrentFirstUse builds curves and encodes from many goroutines at
// once, so that -race checks the lazy table construction.
func TestConcurrentFirstUse(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			dims := g%4 + 2
			c, err := New(dims, 4)
			if err != nil {
				errs <- err
				return
			}
			p := make([]uint32, dims)
			for i := range p {
				p[i] = uint32(g+i) & 15
			}
			got, err := c.Encode(p)
			if err != nil {
				errs <- err
				return
			}
			if ref, _ := ReferenceEncode(dims, 4, p); ref != got {
				errs <- fmt.Errorf("dims=%d %v: %s, reference %s", dims, p, got, ref)
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMachineSizes pins the size of the state machines (documented in
// table.go) and checks each state's level map is a bijection.
func TestMachineSizes(t *testing.T) {
	want := map[int]int{2: 8, 3: 48, 4: 384, 5: 3840}
	for n := 2; n <= MaxDims; n++ {
		m := machine(n)
		if w, ok := want[n]; ok {
			if m == nil || m.states != w {
				t.Fatalf("dims=%d: machine %v, want %d states", n, m, w)
			}
			width := 1 << uint(n)
			for s := 0; s < m.states; s++ {
				seen := make([]bool, width)
				for w := 0; w < width; w++ {
					d := m.enc[s*width+w] & 0xFF
					if seen[d] {
						t.Fatalf("dims=%d state %d: digit %d produced twice", n, s, d)
					}
					seen[d] = true
				}
			}
		} else if m != nil {
			t.Fatalf("dims=%d: got a table of %d states, want the loop path", n, m.states)
		}
	}
}
