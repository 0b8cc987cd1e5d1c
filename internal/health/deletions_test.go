package health

import (
	"math/rand/v2"
	"testing"
)

func TestOverThreshold(t *testing.T) {
	for _, c := range []struct {
		rows, deleted int64
		threshold     float64
		want          bool
	}{
		{100, 5, 0.05, false}, // exactly the threshold: not above it
		{100, 6, 0.05, true},
		{100, 0, 0, false}, // nothing deleted is never purged
		{100, 1, 0, true},
		{0, 0, 0.05, false}, // unknown or empty file
		{10, 10, 1, false},  // threshold 1: never
	} {
		if got := OverThreshold(c.rows, c.deleted, c.threshold); got != c.want {
			t.Errorf("OverThreshold(%d, %d, %g) = %v, want %v", c.rows, c.deleted, c.threshold, got, c.want)
		}
	}
}

// TestDeletionsMatchesBruteForce sums random files' debt and compares with a direct
// count.
func TestDeletionsMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		n := r.IntN(20)
		files := make([]DeletedFile, n)
		threshold := r.Float64() / 4
		var rows, deleted, purgeRows int64
		withDeleted, purge := 0, 0
		for i := range files {
			f := DeletedFile{Path: string(rune('a' + i)), Size: r.Int64N(1000), Rows: r.Int64N(50)}
			if f.Rows > 0 && r.IntN(2) == 0 {
				f.DeletedRows = r.Int64N(f.Rows + 1)
			}
			files[i] = f
			rows += f.Rows
			deleted += f.DeletedRows
			if f.DeletedRows > 0 {
				withDeleted++
				if float64(f.DeletedRows)/float64(f.Rows) > threshold {
					purge++
					purgeRows += f.DeletedRows
				}
			}
		}
		d := Deletions(files, threshold)
		if d.Rows != rows || d.DeletedRows != deleted || d.Files != withDeleted || d.PurgeFiles != purge || d.PurgeDeletedRows != purgeRows || len(d.PerFile) != withDeleted {
			t.Fatalf("iter %d: got %+v; want rows %d deleted %d files %d purge %d (%d rows)", iter, d, rows, deleted, withDeleted, purge, purgeRows)
		}
		for i := 1; i < len(d.PerFile); i++ {
			if d.PerFile[i-1].Ratio < d.PerFile[i].Ratio {
				t.Fatalf("iter %d: per-file list not by decreasing share: %+v", iter, d.PerFile)
			}
		}
	}
}
