package log

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/storage"
)

// sequentialCheckpointEvents is the oracle of the concurrent decode: it reads each
// Parquet file one after another with a single record reader over all its row groups,
// as this package did before row groups were decoded concurrently, and lists the
// events a reader sees: "rows N" for a file's row count, then each action as JSON.
func sequentialCheckpointEvents(t *testing.T, files ...[]byte) []string {
	t.Helper()
	var out []string
	for _, data := range files {
		rdr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("rows %d", rdr.NumRows()))
		var cols []int
		for i := 0; i < rdr.MetaData().Schema.NumColumns(); i++ {
			if p := rdr.MetaData().Schema.Column(i).ColumnPath(); checkpointColumns[p[0]] {
				cols = append(cols, i)
			}
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 15}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := fr.GetRecordReader(context.Background(), cols, nil)
		if err != nil {
			t.Fatal(err)
		}
		var pv partitionInterner
		for rr.Next() {
			rec := rr.RecordBatch()
			segs, err := appendCheckpointRows(nil, rec.Schema().Fields(), rec.Columns(), int(rec.NumRows()), &pv)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range segs {
				if s.adds == nil {
					out = append(out, actionEvent(t, &s.act))
					continue
				}
				for k := range s.adds {
					out = append(out, actionEvent(t, &Action{Add: &s.adds[k]}))
				}
			}
		}
		rr.Release()
		_ = rdr.Close()
	}
	return out
}

func actionEvent(t *testing.T, a *Action) string {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parallelFixture writes two checkpoints with small row groups (odd sizes, so that
// row groups end mid-way through the actions) and stores them as the three parts of
// a multi-part checkpoint: big, small, big.
func parallelFixture(t *testing.T) (l *Log, cp checkpointSet, parts [][]byte) {
	t.Helper()
	defer func(rows int) { checkpointRowGroupRows = rows }(checkpointRowGroupRows)
	encode := func(n, rowGroup int) []byte {
		checkpointRowGroupRows = rowGroup
		l, snap := scaleSnapshot(t, n)
		data, _, err := l.encodeCheckpoint(snap)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	big, small := encode(2500, 97), encode(40, 1000)
	parts = [][]byte{big, small, big}
	s := memStore()
	l = New(s)
	cp = checkpointSet{version: 1, kind: cpMultiPart}
	for i, data := range parts {
		p := fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", logDir, 1, i+1, len(parts))
		if err := s.Put(context.Background(), p, data); err != nil {
			t.Fatal(err)
		}
		cp.files = append(cp.files, storage.ObjectInfo{Path: p, Size: int64(len(data))})
	}
	return l, cp, parts
}

// TestCheckpointParallelDecodeInOrder reads a multi-part checkpoint of many row
// groups with 1, 2 and 7 decoding goroutines: the row counts (size hints) and actions
// reach the reader exactly in the order a sequential read of file after file gives.
func TestCheckpointParallelDecodeInOrder(t *testing.T) {
	l, cp, parts := parallelFixture(t)
	want := sequentialCheckpointEvents(t, parts...)
	if n := len(want); n < 5000 {
		t.Fatalf("fixture has %d events, want over 5,000", n)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 7} {
		runtime.GOMAXPROCS(procs)
		var got []string
		hint := func(rows int64) { got = append(got, fmt.Sprintf("rows %d", rows)) }
		err := l.readCheckpoint(context.Background(), cp, hint, func(a *Action) error {
			got = append(got, actionEvent(t, a))
			return nil
		})
		if err != nil {
			t.Fatalf("GOMAXPROCS %d: %v", procs, err)
		}
		if i := firstDifference(want, got); i >= 0 {
			t.Fatalf("GOMAXPROCS %d: event %d of %d/%d differs:\n got %.200s\nwant %.200s", procs, i, len(got), len(want), eventAt(got, i), eventAt(want, i))
		}
	}
}

func firstDifference(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if eventAt(a, i) != eventAt(b, i) || i >= len(a) || i >= len(b) {
			return i
		}
	}
	return -1
}

func eventAt(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

// TestCheckpointParallelDecodeStops checks that a reader stopping early (its fn
// returning an error) gets that error after exactly the actions before it, wherever it
// stops: in the first row group, at a row group's edge, in a later part, at the end.
func TestCheckpointParallelDecodeStops(t *testing.T) {
	l, cp, parts := parallelFixture(t)
	var total int
	for _, e := range sequentialCheckpointEvents(t, parts...) {
		if !strings.HasPrefix(e, "rows ") {
			total++
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(3)
	stop := errors.New("enough")
	for _, k := range []int{0, 1, 96, 97, 98, 1300, 2540, 2550, total - 1} {
		calls := 0
		err := l.readCheckpoint(context.Background(), cp, nil, func(*Action) error {
			calls++
			if calls > k {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || calls != k+1 {
			t.Errorf("stop after %d actions: %d calls, error %v", k, calls, err)
		}
	}
}

// TestCheckpointParallelDecodeBadPart damages the middle part of a multi-part
// checkpoint: the reader gets every action of the first part, none of the third, and
// an ErrCorruptLog naming the damaged part; likewise for a part that is missing.
func TestCheckpointParallelDecodeBadPart(t *testing.T) {
	l, cp, parts := parallelFixture(t)
	first := 0
	for _, e := range sequentialCheckpointEvents(t, parts[0]) {
		if !strings.HasPrefix(e, "rows ") {
			first++
		}
	}
	ctx := context.Background()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(4)
	bad := cp.files[1].Path
	for _, damage := range []string{"garbage", "truncated", "missing"} {
		s := memStore()
		for i, f := range cp.files {
			data := parts[i]
			if f.Path == bad {
				switch damage {
				case "garbage":
					data = bytes.Repeat([]byte("x"), len(data))
				case "truncated":
					data = slices.Clone(data[:len(data)/2])
				case "missing":
					continue
				}
			}
			if err := s.Put(ctx, f.Path, data); err != nil {
				t.Fatal(err)
			}
		}
		calls := 0
		err := New(s).readCheckpoint(ctx, cp, nil, func(*Action) error { calls++; return nil })
		if err == nil || !strings.Contains(err.Error(), bad) || damage != "missing" && !errors.Is(err, ErrCorruptLog) {
			t.Errorf("%s part: error %v, want one naming %s", damage, err, bad)
		}
		if calls != first {
			t.Errorf("%s part: %d actions before the error, want the first part's %d", damage, calls, first)
		}
	}
	_ = l
}

// TestCheckpointParallelDecodeCanceled cancels the context while the reader is in
// the first row group: the read ends with the context's error.
func TestCheckpointParallelDecodeCanceled(t *testing.T) {
	l, cp, _ := parallelFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	err := l.readCheckpoint(ctx, cp, nil, func(*Action) error {
		calls++
		if calls == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled after 10 actions: %d calls, error %v", calls, err)
	}
}
