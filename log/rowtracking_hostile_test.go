package log

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// hostileRowTracked writes a row-tracked table's version 0 by hand: the protocol, the
// metadata, the files (path, rows, baseRowId; baseRowId < -1 means none) and a
// delta.rowTracking domain holding hwm (domain "" leaves it out, "removed" writes it
// removed).
func hostileRowTracked(t *testing.T, domain string, hwm int64, files ...[3]int64) *Log {
	t.Helper()
	s := memStore()
	proto, _ := json.Marshal(map[string]any{"protocol": rowTracked})
	md, _ := json.Marshal(map[string]any{"metaData": testMetadata()})
	lines := []string{ciLine(1000), string(proto), string(md)}
	for i, f := range files {
		a := newAdd(fmt.Sprintf("f%d", i), int(f[1]))
		if f[2] >= -1 {
			base, ver := f[2], int64(0)
			a.BaseRowID, a.DefaultRowCommitVersion = &base, &ver
		}
		b, _ := json.Marshal(map[string]any{"add": a})
		lines = append(lines, string(b))
	}
	switch domain {
	case "present":
		lines = append(lines, fmt.Sprintf(`{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{\"rowIdHighWaterMark\":%d}","removed":false}}`, hwm))
	case "removed":
		lines = append(lines, `{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{\"rowIdHighWaterMark\":0}","removed":true}}`)
	}
	put(t, s, CommitPath(0), lines...)
	return New(s)
}

// TestRowTrackingRefusesHostileHighWaterMarks: a commit on a log whose high-water mark
// would make row IDs repeat, wrap negative or pass math.MaxInt64 is refused with an
// error naming the mark (RT1), and nothing is committed. Before, `base := hwm+1` and
// `hwm += n` ran unchecked: two appends near math.MaxInt64 got the same baseRowId, one
// at math.MaxInt64 wrapped negative, and a mark below the live files' IDs (lowered by
// hand, or a removed domain) handed out IDs those files already hold.
func TestRowTrackingRefusesHostileHighWaterMarks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		domain string
		hwm    int64
		files  [][3]int64
		rows   int
		want   string
	}{
		{"three rows past a mark near the largest ID", "present", math.MaxInt64 - 1, [][3]int64{{0, 1, 0}}, 3, "row IDs exhausted"},
		{"a mark at the largest ID", "present", math.MaxInt64, [][3]int64{{0, 1, 0}}, 1, "row IDs exhausted"},
		{"a mark below a live file's IDs", "present", 5, [][3]int64{{0, 10, 100}}, 1, "high-water mark 5 is below row ID 109, already assigned to f0"},
		{"a removed domain", "removed", 0, [][3]int64{{0, 10, 0}}, 1, "high-water mark -1 is below row ID 9, already assigned to f0"},
		{"no domain at all", "", 0, [][3]int64{{0, 4, 0}}, 1, "high-water mark -1 is below row ID 3"},
		{"a live file's range past the largest ID", "present", math.MaxInt64, [][3]int64{{0, 10, math.MaxInt64 - 2}}, 1, "pass the largest row ID"},
		{"a negative baseRowId", "present", 10, [][3]int64{{0, 1, -1}}, 1, "baseRowId -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := hostileRowTracked(t, c.domain, c.hwm, c.files...)
			snap, err := l.Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd("g", c.rows)) })
			if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrCorruptLog saying %q", err, c.want)
			}
			if v, _ := l.LatestVersion(ctx); v != 0 {
				t.Fatalf("committed version %d", v)
			}
		})
	}
	t.Run("negative numRecords of the new file", func(t *testing.T) {
		l := hostileRowTracked(t, "present", 9, [3]int64{0, 10, 0})
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		_, err = commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd("g", -5)) })
		if !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), "numRecords -5") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a winner whose mark is below its own file's IDs", func(t *testing.T) {
		l := hostileRowTracked(t, "present", 9, [3]int64{0, 10, 0})
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		// The winner (a foreign writer) adds IDs 1000..1009 and says the mark is 20.
		put(t, l.store, CommitPath(1), ciLine(2000),
			`{"add":{"path":"w","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":10}","baseRowId":1000,"defaultRowCommitVersion":1}}`,
			`{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{\"rowIdHighWaterMark\":20}","removed":false}}`)
		_, err = commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd("g", 1)) })
		if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "below row ID 1009, already assigned to w") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a sound mark still assigns", func(t *testing.T) {
		l := hostileRowTracked(t, "present", math.MaxInt64-3, [3]int64{0, 1, math.MaxInt64 - 3})
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd("g", 3)) }); err != nil {
			t.Fatal(err)
		}
		snap, _ = l.Snapshot(ctx, -1)
		checkRowIDs(t, snap)
		if hwm, _ := snap.RowIDHighWaterMark(); hwm != math.MaxInt64 {
			t.Fatalf("mark %d, want the largest row ID", hwm)
		}
	})
}
