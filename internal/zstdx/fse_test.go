package zstdx

import "testing"

// TestPredefinedTables checks states of the predefined FSE tables against RFC
// 8878's Appendix A.
func TestPredefinedTables(t *testing.T) {
	cases := []struct {
		name  string
		tab   *fseTable
		state int
		want  fseEntry
	}{
		{"LL", llPredef, 0, fseEntry{symbol: 0, nbBits: 4, base: 0}},
		{"LL", llPredef, 1, fseEntry{symbol: 0, nbBits: 4, base: 16}},
		{"LL", llPredef, 2, fseEntry{symbol: 1, nbBits: 5, base: 32}},
		{"LL", llPredef, 38, fseEntry{symbol: 25, nbBits: 4, base: 0}},
		{"LL", llPredef, 63, fseEntry{symbol: 32, nbBits: 6, base: 0}},
		{"ML", mlPredef, 0, fseEntry{symbol: 0, nbBits: 6, base: 0}},
		{"ML", mlPredef, 1, fseEntry{symbol: 1, nbBits: 4, base: 0}},
		{"ML", mlPredef, 44, fseEntry{symbol: 1, nbBits: 4, base: 48}},
		{"ML", mlPredef, 63, fseEntry{symbol: 46, nbBits: 6, base: 0}},
		{"OF", ofPredef, 0, fseEntry{symbol: 0, nbBits: 5, base: 0}},
		{"OF", ofPredef, 1, fseEntry{symbol: 6, nbBits: 4, base: 0}},
		{"OF", ofPredef, 15, fseEntry{symbol: 7, nbBits: 4, base: 16}},
		{"OF", ofPredef, 20, fseEntry{symbol: 8, nbBits: 4, base: 16}},
	}
	for _, c := range cases {
		if got := c.tab.cells[c.state]; got != c.want {
			t.Errorf("%s state %d: %+v, want %+v", c.name, c.state, got, c.want)
		}
	}
}
