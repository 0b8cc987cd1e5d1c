package progress

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarDrawsFinalStateAndEndsLine(t *testing.T) {
	var buf bytes.Buffer
	b := NewWriter(&buf, "optimize")
	b.Update(1, 4, "bins")
	b.Update(2, 4, "bins") // throttled: within 100 ms of the previous draw
	b.Update(4, 4, "bins") // the final state is always drawn
	b.Done()
	out := buf.String()
	if !strings.Contains(out, "optimize [") || !strings.Contains(out, "100% 4/4 bins") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("unexpected bar output %q", out)
	}
	if strings.Contains(out, "2/4") {
		t.Fatalf("update within the throttle window was drawn: %q", out)
	}
}

func TestNilAndSilentBarsDoNothing(t *testing.T) {
	var b *Bar
	b.Update(1, 2, "x")
	b.Done()
	silent := &Bar{}
	silent.Update(1, 2, "x")
	silent.Done()
}
