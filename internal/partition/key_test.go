package partition

import "testing"

// Key gives two files the same key exactly when they have the same raw partition
// values: values cannot run into each other, NULL differs from every string, and an
// absent value or the empty string reads as NULL, as in Delta.
func TestKeyTellsPartitionsApart(t *testing.T) {
	sp := func(s string) *string { return &s }
	add := func(kv ...any) map[string]*string {
		pv := map[string]*string{}
		for i := 0; i < len(kv); i += 2 {
			v, _ := kv[i+1].(*string)
			pv[kv[i].(string)] = v
		}
		return pv
	}
	cols := []string{"a", "b"}
	key := func(pv map[string]*string) string { return Key(cols, pv) }
	distinct := []map[string]*string{
		add("a", sp("x"), "b", sp("yz")),
		add("a", sp("xy"), "b", sp("z")),
		add("a", sp("x"), "b", nil),
		add("a", sp("N"), "b", sp("yz")),
		add("a", nil, "b", sp("yz")),
		add("a", sp("1:x"), "b", sp("")),
		add("a", sp("x"), "b", sp("V1:x")),
		add("a", sp("x\x00Vy"), "b", nil),
		add("a", sp("x"), "b", sp("y")),
	}
	seen := map[string]int{}
	for i, a := range distinct {
		if j, ok := seen[key(a)]; ok {
			t.Fatalf("files %d and %d have different partition values but the key %q", j, i, key(a))
		}
		seen[key(a)] = i
	}
	same := [][2]map[string]*string{
		{add("a", sp("x"), "b", sp("y")), add("b", sp("y"), "a", sp("x"))},
		{add("a", sp("x"), "b", nil), add("a", sp("x"))},
		{add("a", sp("x"), "b", sp("")), add("a", sp("x"), "b", nil)},
		{add("a", sp("x"), "b", sp("y"), "c", sp("other")), add("a", sp("x"), "b", sp("y"))},
	}
	for i, p := range same {
		if key(p[0]) != key(p[1]) {
			t.Fatalf("pair %d: the same partition gets keys %q and %q", i, key(p[0]), key(p[1]))
		}
	}
}
