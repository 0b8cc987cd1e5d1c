package benchskip

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAppends runs the incremental-layout experiment at a small size: the
// rounds' OPTIMIZE runs write at most twice what the appends bring in (write
// amplification ≤ 3, appends included) and never explode into small files (at
// most one file per append's worth of rows more than a rebuild has, plus the
// files waiting at the root).
// BENCHSKIP_APPENDS=1 runs the documented size instead (BENCHSKIP_SF, default
// 0.1; BENCHSKIP_FILES, default 100) and logs the table.
func TestAppends(t *testing.T) {
	c := AppendsConfig{Rows: 40_000, Files: 20, Rounds: 10, Queries: 40, Seed: 3}
	big := os.Getenv("BENCHSKIP_APPENDS") != ""
	if big {
		c = AppendsConfig{ScaleFactor: 0.1, Files: 100, Rounds: 10, Fraction: 0.1, Queries: 100}
		if s := os.Getenv("BENCHSKIP_SF"); s != "" {
			c.ScaleFactor, _ = strconv.ParseFloat(s, 64)
		}
		if s := os.Getenv("BENCHSKIP_FILES"); s != "" {
			c.Files, _ = strconv.Atoi(s)
		}
		c.Dir = os.Getenv("BENCHSKIP_APPENDS_DIR")
	} else if testing.Short() {
		t.Skip("the appends experiment writes and optimizes tables")
	}
	start := time.Now()
	res, err := RunAppends(context.Background(), c, func(stage string, done, total int) {
		if big {
			t.Logf("%7.1fs %s %d/%d", time.Since(start).Seconds(), stage, done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := res.WriteText(&sb); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + sb.String())
	if len(res.Rounds) != c.Rounds+1 {
		t.Fatalf("%d rounds", len(res.Rounds))
	}
	last := res.Rounds[len(res.Rounds)-1]
	if last.WriteAmplification > 3.01 {
		t.Errorf("write amplification %.2f > 3", last.WriteAmplification)
	}
	if limit := res.Rebuild.Files*3/2 + c.Rounds; last.Files > limit {
		t.Errorf("%d files after the appends, a rebuild has %d", last.Files, res.Rebuild.Files)
	}
}
