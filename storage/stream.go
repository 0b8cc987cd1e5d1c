package storage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// Creator is implemented by stores that can write an object as a stream, so that a
// large object (a Parquet data file) need not be held in memory as one []byte. It is an
// optional capability in the style of io/fs: use CreateObject, which falls back to
// buffering and PutIfAbsent for stores without it. Local and Memory implement it.
type Creator interface {
	// Create returns a writer for a new object at path. The path is validated and ctx is
	// checked before anything else happens (ErrInvalidPath, ctx.Err()); ctx governs the
	// whole write and is checked again by Commit.
	//
	// Nothing is visible at path (to Get, Open, Stat or List) until Commit succeeds.
	// Commit publishes the object atomically with put-if-absent semantics (invariant S1):
	// if an object already exists at path it returns an error wrapping ErrExist and leaves
	// that object untouched, and of several writers racing for one path exactly one
	// commits. The object is durable when Commit returns nil. Abort discards everything
	// written. See ObjectWriter for the life cycle.
	Create(ctx context.Context, path string) (ObjectWriter, error)
}

// ObjectWriter streams the bytes of one new object; see Creator.
//
// Life cycle: Write any number of times, then call exactly one of Commit or Abort, which
// ends the writer and releases its resources whatever the outcome. Calling Commit or
// Abort again after that is a no-op that returns nil, so `defer w.Abort()` after a
// successful Create is the idiomatic way to clean up on every error path; only the first
// call's result says whether the object was published. A Write after the end fails with
// an error wrapping fs.ErrClosed. A failed Write is sticky: later Writes return the same
// error and Commit discards the object and returns it too.
//
// Write does not retain the caller's slice. An ObjectWriter is not safe for concurrent
// use; a writer that is neither committed nor aborted holds its resources (for Local, an
// open temporary file) until the process exits.
type ObjectWriter interface {
	io.Writer
	// Commit publishes the object at its path with put-if-absent semantics and makes it
	// durable. It returns an error wrapping ErrExist if an object is already there, or
	// ctx.Err() of the Create context if that is done; either way nothing is published
	// and the writer is ended.
	Commit() error
	// Abort discards everything written and ends the writer. Nothing is published.
	Abort() error
}

// CreateObject returns a streaming writer for a new object at path in s: s.Create if s
// implements Creator, and otherwise a fallback that validates path, buffers the written
// bytes in memory and calls s.PutIfAbsent with them on Commit. Both kinds follow the
// contract of Creator and ObjectWriter.
func CreateObject(ctx context.Context, s Storage, path string) (ObjectWriter, error) {
	if s == nil {
		return nil, fmt.Errorf("storage: create %q: nil Storage", path)
	}
	if c, ok := s.(Creator); ok {
		return c.Create(ctx, path)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: create %q: %w", path, err)
	}
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	return &bufferWriter{ctx: ctx, path: path, put: s.PutIfAbsent}, nil
}

// bufferWriter is the ObjectWriter of CreateObject's fallback and of Memory: it collects
// the bytes in memory and hands them to put on Commit.
type bufferWriter struct {
	ctx  context.Context
	path string
	// put publishes the collected bytes with put-if-absent semantics. It may keep the
	// slice: the writer drops its reference when it ends.
	put  func(ctx context.Context, path string, data []byte) error
	buf  bytes.Buffer
	done bool
}

// Write appends b to the buffer.
func (w *bufferWriter) Write(b []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("storage: write %q: %w", w.path, fs.ErrClosed)
	}
	return w.buf.Write(b)
}

// Commit hands the buffered bytes to put.
func (w *bufferWriter) Commit() error {
	if w.done {
		return nil
	}
	w.done = true
	data := w.buf.Bytes()
	w.buf = bytes.Buffer{}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("storage: commit %q: %w", w.path, err)
	}
	if data == nil {
		data = []byte{}
	}
	return w.put(w.ctx, w.path, data)
}

// Abort drops the buffered bytes.
func (w *bufferWriter) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}

// Create returns a writer that buffers the object in memory and inserts it on Commit
// with the same check-and-insert as PutIfAbsent, without copying the buffer again.
func (m *Memory) Create(ctx context.Context, p string) (ObjectWriter, error) {
	if err := checkMem(ctx, "create", p); err != nil {
		return nil, err
	}
	return &bufferWriter{ctx: ctx, path: p, put: m.insertIfAbsent}, nil
}

// insertIfAbsent stores data at p, taking ownership of it, unless an object exists there.
// The caller has validated p.
func (m *Memory) insertIfAbsent(_ context.Context, p string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[p]; ok {
		return fmt.Errorf("storage: commit %q: %w", p, ErrExist)
	}
	m.objects[p] = memObject{data: data, modTime: m.clock()}
	return nil
}

// streamBufSize is the write buffer of a Local stream: writes reach the temporary file
// in chunks of this size (or larger, for large Writes), and the context is checked at
// each chunk.
const streamBufSize = 1 << 20

// streamBufs recycles the write buffers of ended Local streams.
var streamBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, streamBufSize) }}

// Create returns a writer that streams the object into a new temporary file beside p
// (named and hidden like those of Put, so List never reports it), through a 1 MiB
// buffer. The parent directories of p are created at once. Commit flushes and fsyncs
// the file, hard-links it to p (link(2) fails if p exists: ErrExist, the temporary file
// is removed), removes the temporary name and fsyncs the directory, exactly as
// PutIfAbsent does. Abort closes and removes the temporary file. The context is checked
// here, whenever the buffer is written out, and by Commit before the link.
//
// As with PutIfAbsent, a failed directory fsync after the link is the one error with
// which the object exists; see PutIfAbsent.
func (l *Local) Create(ctx context.Context, p string) (ObjectWriter, error) {
	if err := l.check(ctx, "create", p); err != nil {
		return nil, err
	}
	f, tmp, err := l.createTemp("create", p)
	if err != nil {
		return nil, err
	}
	bw := streamBufs.Get().(*bufio.Writer)
	bw.Reset(ctxFileWriter{ctx: ctx, f: f})
	return &localWriter{l: l, ctx: ctx, path: p, tmp: tmp, f: f, bw: bw}, nil
}

// ctxFileWriter writes to f unless ctx is done; it sits under the bufio.Writer so that
// the check costs nothing per small Write.
type ctxFileWriter struct {
	ctx context.Context
	f   *os.File
}

func (w ctxFileWriter) Write(b []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.f.Write(b)
}

// localWriter is the ObjectWriter of Local.Create.
type localWriter struct {
	l    *Local
	ctx  context.Context
	path string
	tmp  string
	f    *os.File
	bw   *bufio.Writer // nil once the writer has ended
	err  error         // first Write error, sticky
}

// Write buffers b, writing full buffers to the temporary file.
func (w *localWriter) Write(b []byte) (int, error) {
	if w.bw == nil {
		return 0, fmt.Errorf("storage: write %q: %w", w.path, fs.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.bw.Write(b)
	if err != nil {
		w.err = fmt.Errorf("storage: write %q: %w", w.path, err)
		return n, w.err
	}
	return n, nil
}

// Commit publishes the temporary file at the object's path; see Local.Create.
func (w *localWriter) Commit() error {
	if w.bw == nil {
		return nil
	}
	err := w.err
	if err == nil {
		if cerr := w.ctx.Err(); cerr != nil {
			err = fmt.Errorf("storage: commit %q: %w", w.path, cerr)
		} else if ferr := w.bw.Flush(); ferr != nil {
			err = fmt.Errorf("storage: commit %q: write temporary file: %w", w.path, ferr)
		}
	}
	w.release()
	if err != nil {
		w.f.Close()
		w.l.root.Remove(w.tmp)
		return err
	}
	serr := w.f.Sync()
	cerr := w.f.Close()
	if err := errors.Join(serr, cerr); err != nil {
		w.l.root.Remove(w.tmp)
		return fmt.Errorf("storage: commit %q: sync temporary file: %w", w.path, err)
	}
	return w.l.linkTemp("commit", w.tmp, w.path)
}

// Abort closes and removes the temporary file.
func (w *localWriter) Abort() error {
	if w.bw == nil {
		return nil
	}
	w.release()
	cerr := w.f.Close()
	rerr := w.l.root.Remove(w.tmp)
	if errors.Is(rerr, fs.ErrNotExist) {
		rerr = nil // removed behind our back: the goal is reached
	}
	if err := errors.Join(cerr, rerr); err != nil {
		return fmt.Errorf("storage: abort %q: discard temporary file %q: %w", w.path, w.tmp, err)
	}
	return nil
}

// release ends the writer and returns its buffer to the pool, without flushing.
func (w *localWriter) release() {
	w.bw.Reset(nil)
	streamBufs.Put(w.bw)
	w.bw = nil
}
