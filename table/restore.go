package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// RestoreOptions configures Restore. The zero value restores and commits.
type RestoreOptions struct {
	// DryRun computes what the restore would add and remove (and checks that the files
	// exist) without committing.
	DryRun bool
	// Progress, if set, is called while the files are checked.
	Progress func(Progress)
}

// RestoreResult says what a RESTORE did (or would do).
type RestoreResult struct {
	// Version is the committed version (-1 in a dry run).
	Version int64 `json:"version"`
	// RestoredVersion is the version whose files the table now holds.
	RestoredVersion int64 `json:"restoredVersion"`
	// ReadVersion is the latest version when the restore started.
	ReadVersion int64 `json:"readVersion"`
	// DryRun is true when nothing was committed (RestoreOptions.DryRun).
	DryRun bool `json:"dryRun,omitempty"`
	// FilesRestored and BytesRestored count the files added back; FilesRemoved and
	// BytesRemoved those removed; FilesAfter and BytesAfter the table afterwards.
	FilesRestored int   `json:"filesRestored"`
	BytesRestored int64 `json:"bytesRestored"`
	FilesRemoved  int   `json:"filesRemoved"`
	BytesRemoved  int64 `json:"bytesRemoved"`
	FilesAfter    int   `json:"filesAfter"`
	BytesAfter    int64 `json:"bytesAfter"`
	// MetadataRestored is true when the schema or properties changed back.
	MetadataRestored bool `json:"metadataRestored"`
	// Metrics are the operationMetrics the commit records (Spark's names).
	Metrics map[string]string `json:"metrics,omitempty"`
}

// Restore makes the table hold again what version ref held (the way to undo a bad
// DELETE, UPDATE or MERGE): one commit re-adds the files of that version that are no
// longer live (with their deletion vectors) and removes the live files it did not
// have; the metadata (schema, properties) becomes that version's again, the protocol
// only ever grows (Spark's RESTORE). The restored version must be older than the
// latest.
//
// Before anything is committed every data file and deletion-vector file to re-add is
// checked in storage: when VACUUM (or anything else) deleted one, Restore fails with
// ErrRestoreMissingFiles naming them, and nothing is committed. The commit records
// operation RESTORE with Spark's parameters (version, timestamp) and metrics
// (numRestoredFiles, numRemovedFiles, restoredFilesSize, removedFilesSize,
// numOfFilesAfterRestore, tableSizeAfterRestore). It conflicts with every concurrent
// commit that adds or removes data (it read the whole table).
func (t *Table) Restore(ctx context.Context, ref Ref, opts RestoreOptions) (*RestoreResult, error) {
	if ref.kind == refLatest {
		return nil, fmt.Errorf("%w: RESTORE needs a version or a timestamp", ErrInvalidArgument)
	}
	latest, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, err
	}
	target, err := t.Snapshot(ctx, ref)
	if err != nil {
		return nil, err
	}
	if target.Version() >= latest.Version() {
		return nil, fmt.Errorf("%w: version to restore (%d) must be older than the latest version (%d)", ErrInvalidArgument, target.Version(), latest.Version())
	}
	ls, ts := latest.log, target.log
	if err := ls.CheckWritable(); err != nil {
		return nil, err
	}
	res := &RestoreResult{Version: -1, RestoredVersion: ts.Version(), ReadVersion: ls.Version(), DryRun: opts.DryRun, FilesAfter: ts.NumFiles()}
	live := map[string]bool{}
	for _, a := range ls.Files() {
		live[a.Key()] = true
	}
	old := map[string]bool{}
	var toAdd []*log.Add
	for _, a := range ts.Files() {
		old[a.Key()] = true
		res.BytesAfter += a.Size
		if !live[a.Key()] {
			c := *a
			c.DataChange = true
			toAdd = append(toAdd, &c)
			res.FilesRestored++
			res.BytesRestored += a.Size
		}
	}
	now := t.log.Now().UnixMilli()
	var toRemove []*log.Remove
	for _, a := range ls.Files() {
		if !old[a.Key()] {
			toRemove = append(toRemove, a.RemoveAction(now, true))
			res.FilesRemoved++
			res.BytesRemoved += a.Size
		}
	}
	if err := checkFilesExist(ctx, t.store, toAdd, ts.Version(), opts.Progress); err != nil {
		return nil, err
	}
	md, tmd := ls.Metadata(), ts.Metadata()
	res.MetadataRestored = !sameMetadata(md, tmd)
	res.Metrics = map[string]string{
		"numRestoredFiles":       itoa(res.FilesRestored),
		"restoredFilesSize":      itoa64(res.BytesRestored),
		"numRemovedFiles":        itoa(res.FilesRemoved),
		"removedFilesSize":       itoa64(res.BytesRemoved),
		"numOfFilesAfterRestore": itoa(res.FilesAfter),
		"tableSizeAfterRestore":  itoa64(res.BytesAfter),
	}
	if opts.DryRun {
		return res, nil
	}
	txn := ls.NewTransaction(log.TxnOptions{IsolationLevel: log.Serializable})
	txn.ReadWholeTable()
	txn.Remove(toRemove...)
	txn.Add(toAdd...)
	if res.MetadataRestored {
		txn.SetMetadata(tmd)
	}
	tp := ts.Protocol()
	merged, err := log.UpgradeProtocol(ls.Protocol(), tp.MinReaderVersion, tp.MinWriterVersion, append(log.WriterFeatures(tp), tp.ReaderFeatures...)...)
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(merged, ls.Protocol()) {
		txn.SetProtocol(merged)
	}
	// Spark's RESTORE parameters: version a number, timestamp a string, the other null.
	params := map[string]string{"version": "null", "timestamp": "null"}
	if ref.kind == refVersion {
		params["version"] = strconv.FormatInt(ts.Version(), 10)
	} else {
		params["timestamp"] = paramString(ref.at.UTC().Format(time.RFC3339Nano))
	}
	v, err := txn.Commit(ctx, log.CommitInfo{Operation: "RESTORE", OperationParameters: params, OperationMetrics: res.Metrics})
	if err != nil {
		return nil, err
	}
	res.Version = v
	return res, nil
}

// sameMetadata reports whether two metaData actions describe the same table state.
func sameMetadata(a, b log.Metadata) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// restoreStatParallelism bounds the storage requests Restore's file check has in
// flight (each is one round trip on an object store).
const restoreStatParallelism = 16

// checkFilesExist stats every data file and deletion-vector file the adds reference
// and fails with ErrRestoreMissingFiles listing (up to 20 of) those missing.
func checkFilesExist(ctx context.Context, st storage.Storage, adds []*log.Add, version int64, progress func(Progress)) error {
	var paths []string
	seen := map[string]bool{}
	for _, a := range adds {
		p, err := a.DecodedPath()
		if err != nil {
			return err
		}
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
		if d := a.DeletionVector; d != nil && d.StorageType != "i" {
			rel, err := dv.FromLog(d).RelativePath(storage.RootOf(st))
			if err != nil {
				return fmt.Errorf("table: deletion vector of %s: %w", a.Path, err)
			}
			if !seen[rel] {
				seen[rel] = true
				paths = append(paths, rel)
			}
		}
	}
	var (
		mu      sync.Mutex
		missing []string
		done    int64
	)
	// Up to restoreStatParallelism requests at once; the first error that is not
	// "missing" stops the others (through gctx), and nothing starts once ctx ends.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(restoreStatParallelism)
	for _, p := range paths {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // stopped while waiting for a slot (reported below)
			}
			_, err := st.Stat(gctx, p)
			mu.Lock()
			defer mu.Unlock()
			done++
			if progress != nil {
				progress(Progress{Phase: "check", Done: done, Total: int64(len(paths)), Unit: "files"})
			}
			switch {
			case err == nil:
			case errors.Is(err, storage.ErrNotExist):
				missing = append(missing, p)
			default:
				return fmt.Errorf("table: checking %s: %w", p, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("table: checking the files of version %d: %w", version, err)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		shown := missing
		if len(shown) > 20 {
			shown = shown[:20]
		}
		more := ""
		if len(missing) > len(shown) {
			more = fmt.Sprintf(", and %d more", len(missing)-len(shown))
		}
		return fmt.Errorf("%w: %d file(s) of version %d no longer exist (deleted by VACUUM?): %s%s; nothing was committed",
			ErrRestoreMissingFiles, len(missing), version, strings.Join(shown, ", "), more)
	}
	return nil
}
