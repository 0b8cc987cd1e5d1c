package dv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// DefaultTargetFileSize is the size at which Write starts a new DV file: 2 MiB, Spark's
// default (spark.databricks.delta.deletionVectors.packing.targetSize). It bounds what a
// reader that fetches whole DV files reads for one vector.
const DefaultTargetFileSize = 2 << 20

// WriteOptions configures Write. The zero value writes every vector into
// deletion_vector_<uuid>.bin files at the table root, packed up to
// DefaultTargetFileSize per file, which is what Spark does by default.
type WriteOptions struct {
	// RandomPrefixLength, when positive, puts each DV file under a directory of that many
	// random alphanumeric characters (Spark's delta.randomizeFilePrefixes with
	// delta.randomPrefixLength), which spreads object-store request load. Default 0: the
	// table root.
	RandomPrefixLength int
	// InlineMaxBytes, when positive, stores a vector whose bitmapData is at most this many
	// bytes inline in the log (storage type 'i') instead of in a file. Default 0: never.
	// Spark never writes inline vectors, and an inline vector is carried by every log
	// replay and checkpoint; use it only for tables whose DML touches few rows.
	InlineMaxBytes int
	// TargetFileSize is the size in bytes at which a new DV file is started (a vector is
	// never split). Default 0: DefaultTargetFileSize. Negative: one file for the call.
	TargetFileSize int64
	// NewUUID returns the id of each new file. Default uuid.New; tests set it for
	// reproducible names.
	NewUUID func() uuid.UUID
}

func (o WriteOptions) target() int64 {
	switch {
	case o.TargetFileSize == 0:
		return DefaultTargetFileSize
	case o.TargetFileSize < 0:
		return 1<<63 - 1
	}
	return o.TargetFileSize
}

// Written is what Write stored.
type Written struct {
	// Descriptors[i] is the log descriptor of the i-th bitmap given to Write.
	Descriptors []*log.DeletionVectorDescriptor
	// Files are the DV files written, relative to the table root, in write order; empty
	// when every vector went inline.
	Files []string
	// Bytes is the total size of Files.
	Bytes int64
}

// Write stores the deletion vectors of one commit: bitmaps[i] holds the deleted row
// positions of one data file (already merged with the file's existing vector, see
// Union). Vectors go, in order, into as few new deletion_vector_<uuid>.bin files as
// TargetFileSize allows (or inline, see WriteOptions), and each file is streamed to st
// through storage.CreateObject (the store's Creator when it has one) and published with
// put-if-absent semantics. Write returns only when every file is durable, so the
// descriptors may be committed to the log at once (invariant L2 of the log: files before
// the commit that references them).
//
// Each bitmap is run-optimized in place (its rows are unchanged). An empty bitmap is
// refused with ErrEmptyVector and a row position with the top bit set with
// ErrInvalidRows, before anything is written. On any error (including ctx being done)
// Write aborts the file it is writing, deletes the files it already published (best
// effort: a leftover is unreferenced, and VACUUM removes it), and returns the error.
func Write(ctx context.Context, st storage.Storage, bitmaps []*roaring64.Bitmap, opts WriteOptions) (*Written, error) {
	if opts.InlineMaxBytes < 0 || opts.RandomPrefixLength < 0 {
		return nil, fmt.Errorf("%w: negative InlineMaxBytes %d or RandomPrefixLength %d", ErrInvalidDescriptor, opts.InlineMaxBytes, opts.RandomPrefixLength)
	}
	bodies := make([][]byte, len(bitmaps))
	for i, bm := range bitmaps {
		if bm == nil || bm.IsEmpty() {
			return nil, fmt.Errorf("%w (vector %d of %d)", ErrEmptyVector, i, len(bitmaps))
		}
		body, err := SerializeBitmap(bm)
		if err != nil {
			return nil, fmt.Errorf("vector %d of %d: %w", i, len(bitmaps), err)
		}
		bodies[i] = body
	}
	newID := opts.NewUUID
	if newID == nil {
		newID = uuid.New
	}
	w := &storeWriter{ctx: ctx, st: st, opts: opts, newID: newID, out: &Written{Descriptors: make([]*log.DeletionVectorDescriptor, len(bitmaps))}}
	err := w.run(bitmaps, bodies)
	if err != nil {
		w.abort()
		return nil, errors.Join(err, w.cleanup())
	}
	return w.out, nil
}

type storeWriter struct {
	ctx   context.Context
	st    storage.Storage
	opts  WriteOptions
	newID func() uuid.UUID
	out   *Written
	obj   storage.ObjectWriter
	fw    *FileWriter
}

func (w *storeWriter) run(bitmaps []*roaring64.Bitmap, bodies [][]byte) error {
	target := w.opts.target()
	for i, body := range bodies {
		card := int64(bitmaps[i].GetCardinality())
		if len(body) <= w.opts.InlineMaxBytes {
			w.out.Descriptors[i] = inlineDescriptor(body, card).ToLog()
			continue
		}
		if w.fw != nil && w.fw.Len() > 0 && w.fw.Size()+int64(8+len(body)) > target {
			if err := w.finish(); err != nil {
				return err
			}
		}
		if w.fw == nil {
			if err := w.start(); err != nil {
				return err
			}
		}
		d, err := w.fw.addSerialized(body, card)
		if err != nil {
			return fmt.Errorf("vector %d of %d: %w", i, len(bodies), err)
		}
		w.out.Descriptors[i] = d.ToLog()
	}
	if w.fw != nil {
		return w.finish()
	}
	return nil
}

// start opens a new DV file.
func (w *storeWriter) start() error {
	prefix := randomPrefix(w.opts.RandomPrefixLength)
	id := w.newID()
	probe := Descriptor{StorageType: StorageUUID, PathOrInlineDv: prefix + EncodeZ85(id[:])}
	rel, err := probe.RelativePath("")
	if err != nil {
		return err
	}
	obj, err := storage.CreateObject(w.ctx, w.st, rel)
	if err != nil {
		return fmt.Errorf("dv: create %s: %w", rel, err)
	}
	w.obj = obj
	fw, err := NewFileWriter(obj, id, prefix)
	if err != nil {
		return err
	}
	w.fw = fw
	return nil
}

// finish publishes the current file.
func (w *storeWriter) finish() error {
	obj, fw := w.obj, w.fw
	w.obj, w.fw = nil, nil
	if err := w.ctx.Err(); err != nil {
		obj.Abort()
		return fmt.Errorf("dv: write %s: %w", fw.Path(), err)
	}
	if err := obj.Commit(); err != nil {
		return fmt.Errorf("dv: publish %s: %w", fw.Path(), err)
	}
	w.out.Files = append(w.out.Files, fw.Path())
	w.out.Bytes += fw.Size()
	return nil
}

// abort discards the file being written, if any.
func (w *storeWriter) abort() {
	if w.obj != nil {
		w.obj.Abort()
		w.obj, w.fw = nil, nil
	}
}

// cleanup deletes the files already published by this call. It uses a context that is
// not cancelled with the caller's, so that a cancelled Write still removes its files.
func (w *storeWriter) cleanup() error {
	var errs []error
	ctx := context.WithoutCancel(w.ctx)
	for _, p := range w.out.Files {
		if err := w.st.Delete(ctx, p); err != nil && !errors.Is(err, storage.ErrNotExist) {
			errs = append(errs, fmt.Errorf("dv: remove %s after a failed write: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

const prefixAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomPrefix returns n random alphanumeric characters (Spark's getRandomPrefix).
func randomPrefix(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = prefixAlphabet[rand.IntN(len(prefixAlphabet))]
	}
	return string(b)
}
