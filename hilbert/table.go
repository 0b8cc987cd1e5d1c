package hilbert

// The fast path runs Skilling's transform as a finite-state machine over the
// levels of the curve, from the most significant level down.
//
// Skilling's AxesToTranspose, at the level of bit Q, tests bit Q of each
// coordinate and then either inverts the lower bits of X[0] or exchanges the
// lower bits of X[0] and X[i]. Those operations never touch bit Q or above, so
// everything that has happened to the lower bits so far is a signed
// permutation of the coordinates: lower(X[i]) = lower(raw[perm[i]]) ^ flip_i.
// The Gray-code step that follows is also level by level: bit i of the output
// at a level is v_0^...^v_i (v = transformed bits of that level) XOR the parity
// of the last coordinate's Gray bits at all higher levels. The machine state is
// therefore (perm, flip, parity), and one level maps (state, n raw bits) to
// (n output bits, next state) independently of the level. The states are
// found by breadth-first search from the identity, and the table is checked
// against the reference by exhaustive and fuzz tests (invariant H4).
//
// The search finds n!·2^n states (pinned by TestMachineSizes): 8, 48, 384
// and 3840 for n = 2..5, i.e. tables of
// 32, 384, 6144 and 122880 entries (4 bytes each, twice: encode and decode).
// Minimising it as a Moore machine only halves that, and n = 6 would already
// need 46080 states × 64 inputs, so n ≥ 6 uses the loop instead.

// fsmState is one state of the machine before it is numbered.
type fsmState struct {
	perm   [MaxDims]uint8
	flip   uint8 // bit i: coordinate slot i is inverted
	parity uint8
}

// fsm is the numbered state machine for one dimension count.
type fsm struct {
	dims int
	// enc[s<<dims|w] = digit | (next<<dims)<<8 for raw level bits w
	// (coordinate 0 at the most significant of the dims bits). The next state
	// is stored pre-shifted so the next index is just base | w.
	enc []uint32
	// dec[s<<dims|d] = w | (next<<dims)<<8, the inverse for output digit d.
	dec []uint32
	// multi, when not nil, runs multiLevels levels in one lookup:
	// multi[s<<(dims*multiLevels)|w] = digits | (next<<(dims*multiLevels))<<16 for
	// the raw bits w of multiLevels levels, the highest level first (see buildMulti).
	multi       []uint32
	multiLevels int
	states      int
}

// maxTableEntries bounds the table size, and maxTableDims the dimension
// counts that get a table at all: the search finds 46080 states for six
// dimensions (×64 entries each), too large to build at first use or to keep
// in cache. Larger counts use the branch-free loop (transposeBranchFree).
const (
	maxTableEntries = 1 << 17
	maxTableDims    = 5
)

// step applies one level of the transform to state s with raw bits w.
func step(n int, s fsmState, w uint32) (digit uint32, next fsmState) {
	var v [MaxDims]uint8
	for i := 0; i < n; i++ {
		raw := uint8(w >> uint(n-1-int(s.perm[i])) & 1)
		v[i] = raw ^ (s.flip >> uint(i) & 1)
	}
	next = s
	for i := 0; i < n; i++ {
		if v[i] == 1 {
			next.flip ^= 1
		} else if i != 0 {
			next.perm[0], next.perm[i] = next.perm[i], next.perm[0]
			f0, fi := next.flip&1, next.flip>>uint(i)&1
			next.flip &^= 1 | 1<<uint(i)
			next.flip |= fi | f0<<uint(i)
		}
	}
	var g uint8
	for i := 0; i < n; i++ {
		g ^= v[i]
		digit |= uint32(g^s.parity) << uint(n-1-i)
	}
	next.parity = s.parity ^ g
	return digit, next
}

// buildFSM enumerates the machine for n dimensions, or returns nil when it
// would need more than maxTableEntries entries.
func buildFSM(n int) *fsm {
	var start fsmState
	for i := range start.perm {
		start.perm[i] = uint8(i)
	}
	ids := map[fsmState]int{start: 0}
	order := []fsmState{start}
	width := 1 << uint(n)
	var enc []uint32
	for q := 0; q < len(order); q++ {
		if (q+1)*width > maxTableEntries {
			return nil
		}
		s := order[q]
		for w := 0; w < width; w++ {
			d, nx := step(n, s, uint32(w))
			id, ok := ids[nx]
			if !ok {
				id = len(order)
				ids[nx] = id
				order = append(order, nx)
			}
			enc = append(enc, d|uint32(id<<uint(n))<<8)
		}
	}
	dec := make([]uint32, len(enc))
	for s := range order {
		for w := 0; w < width; w++ {
			e := enc[s*width+w]
			dec[s*width+int(e&0xFF)] = uint32(w) | e&^0xFF
		}
	}
	m := &fsm{dims: n, enc: enc, dec: dec, states: len(order)}
	m.buildMulti()
	return m
}

// maxMultiEntries bounds the multi-level table (4 bytes an entry): it should stay
// in the L1 cache next to the rest of a batch's working set.
const maxMultiEntries = 4096

// buildMulti builds the multi-level encoding table: the most levels at once whose
// table (states × 2^(dims·levels) entries, at most 16 digit bits) stays within
// maxMultiEntries, when that is more than one level — 4 levels for 2 dimensions,
// 2 for 3; one lookup then stands for that many chained lookups of enc (the
// entry is those lookups' digits and final state), so a key costs a quarter or a
// half of the dependent loads.
func (m *fsm) buildMulti() {
	n := m.dims
	levels := 1
	for l := 2; n*l <= 16 && m.states<<(n*l) <= maxMultiEntries; l++ {
		levels = l
	}
	if levels == 1 {
		return
	}
	width := uint32(1) << uint(n)
	wide := 1 << uint(n*levels)
	multi := make([]uint32, m.states*wide)
	for s := 0; s < m.states; s++ {
		for w := 0; w < wide; w++ {
			st := uint32(s) << uint(n)
			var digits uint32
			for l := levels - 1; l >= 0; l-- {
				e := m.enc[st|uint32(w>>(uint(n*l)))&(width-1)]
				digits = digits<<uint(n) | e&0xFF
				st = e >> 8
			}
			next := st >> uint(n) // the state's number
			multi[s*wide+w] = digits | next<<uint(n*levels)<<16
		}
	}
	m.multi, m.multiLevels = multi, levels
}
