package log

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestReplayLiveAdds checks the live files a replay keeps against its adds map (the
// reconciliation, L3) for random sequences of adds and removes over a few keys —
// re-adds of a live key, removes of absent keys, deletion-vector keys — with and
// without a presized checkpoint start.
func TestReplayLiveAdds(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 6))
	dv := &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab", SizeInBytes: 1, Cardinality: 1}
	for trial := range 2000 {
		rp := newReplay()
		if trial%2 == 0 {
			rp.sizeHint(int64(r.IntN(20)))
		}
		for range r.IntN(30) {
			path := fmt.Sprintf("f%d", r.IntN(6))
			var d *DeletionVectorDescriptor
			if r.IntN(4) == 0 {
				d = dv
			}
			var a Action
			if r.IntN(3) == 0 {
				a.Remove = &Remove{Path: path, DeletionVector: d}
			} else {
				a.Add = &Add{Path: path, DeletionVector: d}
			}
			if err := rp.apply(&a); err != nil {
				t.Fatal(err)
			}
		}
		got := rp.liveAdds()
		if len(got) != len(rp.adds) {
			t.Fatalf("trial %d: %d live adds, the adds map has %d", trial, len(got), len(rp.adds))
		}
		for _, a := range got {
			if rp.adds[a.Key()] != a {
				t.Fatalf("trial %d: %s kept but superseded or removed", trial, a.Key())
			}
		}
	}
}
