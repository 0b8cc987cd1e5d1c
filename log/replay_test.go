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

// TestReplayCheckpointIndexMatchesPlain checks the checkpoint start of a replay
// (applyCheckpoint, endCheckpoint's index) against the plain map replay (apply for
// every action): the same live adds in the same order and the same tombstones, for
// random checkpoints — unique keys as written, and hostile ones with duplicate adds
// or removes of added keys — followed by random commits that re-add, remove and
// re-add keys, deletion-vector keys included. A few trials are large enough for the
// index to be built on several goroutines.
func TestReplayCheckpointIndexMatchesPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 62))
	dvs := []*DeletionVectorDescriptor{
		nil,
		{StorageType: "u", PathOrInlineDv: "ab", SizeInBytes: 1, Cardinality: 1},
		{StorageType: "i", PathOrInlineDv: "cd", SizeInBytes: 2, Cardinality: 2},
	}
	for trial := range 600 {
		nCp := r.IntN(40)
		if trial%100 == 0 {
			nCp = addIndexMinParallel + r.IntN(3*addIndexMinParallel)
		}
		keys := max(1, nCp)
		hostile := trial%3 == 0
		var cp, commits []Action
		perm := r.Perm(keys)
		for i := range nCp {
			k := perm[i]
			if hostile && r.IntN(8) == 0 {
				k = r.IntN(keys) // may repeat a key
			}
			if r.IntN(6) == 0 {
				// a tombstone: of an unused key, or (hostile) of any key
				rk := keys + r.IntN(keys)
				if hostile {
					rk = r.IntN(2 * keys)
				}
				cp = append(cp, Action{Remove: &Remove{Path: fmt.Sprintf("p%%41/f%d", rk), DeletionVector: dvs[rk%3]}})
			}
			cp = append(cp, Action{Add: &Add{Path: fmt.Sprintf("p%%41/f%d", k), DeletionVector: dvs[k%3]}})
		}
		for range r.IntN(30) {
			k := r.IntN(keys + 5)
			if nCp > 0 && r.IntN(2) == 0 {
				k = perm[r.IntN(nCp)]
			}
			d := dvs[k%3]
			if r.IntN(5) == 0 {
				d = dvs[r.IntN(3)]
			}
			// the path spelled escaped or not: the key is the unescaped path
			path := fmt.Sprintf("p%%41/f%d", k)
			if r.IntN(2) == 0 {
				path = fmt.Sprintf("pA/f%d", k)
			}
			if r.IntN(3) == 0 {
				commits = append(commits, Action{Remove: &Remove{Path: path, DeletionVector: d}})
			} else {
				commits = append(commits, Action{Add: &Add{Path: path, DeletionVector: d}})
			}
		}
		plain, indexed := newReplay(), newReplay()
		indexed.sizeHint(int64(len(cp)))
		for i := range cp {
			if err := plain.apply(&cp[i]); err != nil {
				t.Fatal(err)
			}
			a := cp[i]
			if err := indexed.applyCheckpoint(&a); err != nil {
				t.Fatal(err)
			}
		}
		indexed.endCheckpoint()
		for i := range commits {
			if err := plain.apply(&commits[i]); err != nil {
				t.Fatal(err)
			}
			if err := indexed.apply(&commits[i]); err != nil {
				t.Fatal(err)
			}
		}
		want, got := plain.liveAdds(), indexed.liveAdds()
		if len(got) != len(want) {
			t.Fatalf("trial %d (%d checkpoint actions, hostile %v): %d live adds, plain replay %d", trial, len(cp), hostile, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("trial %d: live add %d is %s, plain replay %s", trial, i, got[i].Key(), want[i].Key())
			}
		}
		if len(indexed.removes) != len(plain.removes) {
			t.Fatalf("trial %d: %d tombstones, plain replay %d", trial, len(indexed.removes), len(plain.removes))
		}
		for k, rm := range plain.removes {
			if indexed.removes[k] != rm {
				t.Fatalf("trial %d: tombstone %q differs", trial, k)
			}
		}
		if !hostile && nCp > 0 && indexed.base == nil {
			t.Fatalf("trial %d: a checkpoint with unique keys was not indexed", trial)
		}
	}
}

// TestAddIndexFind checks addIndex lookups against a map for present and absent
// keys, on one goroutine and on several, and that a duplicate key is reported.
func TestAddIndexFind(t *testing.T) {
	for _, n := range []int{1, 7, 1000, addIndexMinParallel * 3} {
		adds := make([]*Add, n)
		for i := range adds {
			adds[i] = &Add{Path: fmt.Sprintf("part=%d/f-%d.parquet", i%13, i)}
		}
		ix, dup := buildAddIndex(adds)
		if dup {
			t.Fatalf("n=%d: unique keys reported as duplicates", n)
		}
		for i, a := range adds {
			if got := ix.find(a.Key()); got != i {
				t.Fatalf("n=%d: find(%q) = %d, want %d", n, a.Key(), got, i)
			}
			if got := ix.find(a.Key() + "x"); got != -1 {
				t.Fatalf("n=%d: find of an absent key = %d", n, got)
			}
		}
		adds = append(adds, &Add{Path: adds[n/2].Path})
		if _, dup := buildAddIndex(adds); !dup {
			t.Fatalf("n=%d: duplicate key not reported", n)
		}
	}
}
