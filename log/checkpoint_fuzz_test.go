package log

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/internal/goldentest"
	"github.com/skiplake/skiplake/storage"
)

// Checkpoint fuzzing places the fuzzed bytes where a reader meets checkpoint Parquet
// (fuzzCheckpointKinds) and reads the checkpoint as a snapshot would.
const (
	fuzzClassic   = iota // %020d.checkpoint.parquet
	fuzzMultiPart        // part 1 of a 2-part checkpoint whose part 2 is intact
	fuzzV2Parquet        // a v2 checkpoint manifest in Parquet (its sidecar rows are followed)
	fuzzSidecar          // a sidecar named by an intact v2 JSON manifest
	fuzzCheckpointKinds
)

// fuzzCheckpointSeeds returns checkpoint Parquet files to seed from: the ones this
// package writes (classic, with and without stats_parsed) and, when they are there,
// every checkpoint, multi-part part and sidecar of the golden tables and the
// regression tables (small ones: the fuzzer mutates them byte by byte).
func fuzzCheckpointSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, cfg := range []string{"", `"delta.checkpoint.writeStatsAsStruct":"true"`} {
		seeds = append(seeds, writtenCheckpoint(tb, cfg))
	}
	for _, lookup := range []func() (string, string, bool){goldentest.Lookup, goldentest.LookupRegressions} {
		dir, _, _ := lookup()
		if dir == "" {
			continue
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(p, "_delta_log") || !strings.HasSuffix(p, ".parquet") {
				return nil
			}
			if st, err := d.Info(); err != nil || st.Size() > 64<<10 {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil {
				seeds = append(seeds, b)
			}
			return nil
		})
	}
	return seeds
}

// writtenCheckpoint returns the classic checkpoint this package writes for a small
// table with every kind of action (configuration cfg).
func writtenCheckpoint(tb testing.TB, cfg string) []byte {
	ctx := context.Background()
	s := memStore()
	put(tb, s, CommitPath(0), ciLine(1000), protoLine, mdLine(cfg),
		`{"add":{"path":"a.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":3,\"minValues\":{\"id\":1},\"maxValues\":{\"id\":9},\"nullCount\":{\"id\":0}}"}}`,
		`{"txn":{"appId":"app","version":4,"lastUpdated":5}}`)
	put(tb, s, CommitPath(1), ciLine(1010), addLine("b.parquet", 2),
		`{"remove":{"path":"old.parquet","deletionTimestamp":1005,"dataChange":true,"extendedFileMetadata":true,"partitionValues":{},"size":4}}`)
	l := New(s)
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		tb.Fatal(err)
	}
	if err := l.Checkpoint(ctx, snap); err != nil {
		tb.Fatal(err)
	}
	b, err := s.Get(ctx, CheckpointPath(1))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// readFuzzedCheckpoint stores data as kind says and reads the checkpoint at version 1.
func readFuzzedCheckpoint(tb testing.TB, kind int, data, intact []byte) (string, error) {
	ctx := context.Background()
	s := memStore()
	var cp checkpointSet
	var path string
	stored := func(p string, b []byte) storage.ObjectInfo {
		if err := s.Put(ctx, p, b); err != nil {
			tb.Fatal(err)
		}
		return storage.ObjectInfo{Path: p, Size: int64(len(b))}
	}
	switch kind {
	case fuzzClassic:
		path = CheckpointPath(1)
		cp = checkpointSet{version: 1, kind: cpClassic, files: []storage.ObjectInfo{stored(path, data)}}
	case fuzzMultiPart:
		path = fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", logDir, 1, 1, 2)
		two := stored(fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", logDir, 1, 2, 2), intact)
		cp = checkpointSet{version: 1, kind: cpMultiPart, files: []storage.ObjectInfo{stored(path, data), two}}
	case fuzzV2Parquet:
		path = fmt.Sprintf("%s%020d.checkpoint.%s.parquet", logDir, 1, "3a0d65cd-4056-49b8-937b-95f9e3ee90e5")
		stored(sidecarDir+"intact.parquet", intact)
		cp = checkpointSet{version: 1, kind: cpV2Parquet, files: []storage.ObjectInfo{stored(path, data)}}
	case fuzzSidecar:
		path = sidecarDir + "fuzzed.parquet"
		stored(path, data)
		manifest := fmt.Sprintf("%s\n%s\n{\"sidecar\":{\"path\":\"fuzzed.parquet\",\"sizeInBytes\":%d,\"modificationTime\":1}}\n{\"checkpointMetadata\":{\"version\":1}}\n",
			protoLine, mdLine(""), len(data))
		mp := fmt.Sprintf("%s%020d.checkpoint.%s.json", logDir, 1, "9b1f4c2e-0a37-4d55-8a4e-2f1c3b5d6e7f")
		cp = checkpointSet{version: 1, kind: cpV2JSON, files: []storage.ObjectInfo{stored(mp, []byte(manifest))}}
	}
	err := New(s).readCheckpoint(ctx, cp, nil, func(a *Action) error {
		if a.count() != 1 {
			return fmt.Errorf("action with %d fields", a.count())
		}
		if a.Add != nil {
			_ = a.Add.Key()
		}
		return nil
	})
	return path, err
}

// FuzzReadCheckpoint reads damaged checkpoint Parquet — a classic checkpoint, a part
// of a multi-part one, a v2 manifest in Parquet and a v2 sidecar — and checks that the
// reader never panics (invariant CK1), emits only single actions, and that every
// error is a log error: a corrupt file is ErrCorruptLog naming it; the other errors
// fuzzed sidecar rows can cause are a sidecar that is not there or an absolute URI.
func FuzzReadCheckpoint(f *testing.F) {
	seeds := fuzzCheckpointSeeds(f)
	intact := seeds[0]
	for _, s := range seeds {
		for k := range fuzzCheckpointKinds {
			f.Add(uint8(k), s)
		}
	}
	f.Add(uint8(fuzzClassic), []byte("PAR1"))
	f.Add(uint8(fuzzSidecar), []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		k := int(kind) % fuzzCheckpointKinds
		path, err := readFuzzedCheckpoint(t, k, data, intact)
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), "log: ") {
			t.Fatalf("error without the package prefix: %v", err)
		}
		switch {
		case errors.Is(err, ErrCorruptLog):
			if !strings.Contains(err.Error(), logDir) {
				t.Fatalf("corrupt-log error names no log file: %v", err)
			}
			if (k == fuzzClassic || k == fuzzSidecar) && !strings.Contains(err.Error(), path) {
				t.Fatalf("corrupt-log error does not name %s: %v", path, err)
			}
		case errors.Is(err, storage.ErrNotExist) || errors.Is(err, ErrUnsupportedPath):
			// Sidecar rows (allowed in any Parquet checkpoint of a v2Checkpoint table)
			// name files that are not there.
		default:
			t.Fatalf("kind %d: unexpected error: %v", k, err)
		}
	})
}
