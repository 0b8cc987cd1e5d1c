package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is an in-memory Storage for tests and examples. It has the same semantics as
// Local: paths are validated, data is copied in on writes and out on reads (callers may
// reuse their slices), PutIfAbsent is atomic, directories do not exist as objects.
// Unlike Local, a path may be both an object and a prefix of other objects ("a" and
// "a/b"), as in object stores.
//
// ModTime comes from a clock, time.Now by default; SetClock and SetModTime let tests of
// time travel and retention control it. Memory is safe for concurrent use; the zero value
// is not usable, call NewMemory.
type Memory struct {
	mu      sync.RWMutex
	objects map[string]memObject
	clock   func() time.Time
}

type memObject struct {
	data    []byte
	modTime time.Time
}

// NewMemory returns an empty in-memory store whose clock is time.Now.
func NewMemory() *Memory {
	return &Memory{objects: make(map[string]memObject), clock: time.Now}
}

// SetClock replaces the clock that stamps ModTime on writes; nil restores time.Now.
func (m *Memory) SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	m.mu.Lock()
	m.clock = now
	m.mu.Unlock()
}

// SetModTime sets the modification time of an existing object. It returns an error
// wrapping ErrInvalidPath or ErrNotExist when p is invalid or absent.
func (m *Memory) SetModTime(p string, t time.Time) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[p]
	if !ok {
		return fmt.Errorf("storage: set mod time %q: %w", p, ErrNotExist)
	}
	o.modTime = t
	m.objects[p] = o
	return nil
}

// String returns "memory", for logs and error messages.
func (m *Memory) String() string { return "memory" }

func checkMem(ctx context.Context, op, p string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: %s %q: %w", op, p, err)
	}
	if err := ValidatePath(p); err != nil {
		return err // names the path and the reason; the sentinel's text carries the prefix
	}
	return nil
}

// Get returns a copy of the whole object.
func (m *Memory) Get(ctx context.Context, p string) ([]byte, error) {
	if err := checkMem(ctx, "get", p); err != nil {
		return nil, err
	}
	m.mu.RLock()
	o, ok := m.objects[p]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("storage: get %q: %w", p, ErrNotExist)
	}
	// Stored slices are never mutated after insertion, so copying outside the lock is safe.
	return bytes.Clone(o.data), nil
}

// Open returns a view of the object as it is now; later writes to p do not affect it.
func (m *Memory) Open(ctx context.Context, p string) (File, error) {
	if err := checkMem(ctx, "open", p); err != nil {
		return nil, err
	}
	m.mu.RLock()
	o, ok := m.objects[p]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("storage: open %q: %w", p, ErrNotExist)
	}
	return &memFile{r: bytes.NewReader(o.data), path: p}, nil
}

// Put stores a copy of data at p, replacing any previous object.
func (m *Memory) Put(ctx context.Context, p string, data []byte) error {
	if err := checkMem(ctx, "put", p); err != nil {
		return err
	}
	c := cloneNonNil(data)
	m.mu.Lock()
	m.objects[p] = memObject{data: c, modTime: m.clock()}
	m.mu.Unlock()
	return nil
}

// PutIfAbsent stores a copy of data at p unless an object exists there, in which case
// it returns an error wrapping ErrExist. The check and the insert happen under one lock.
func (m *Memory) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if err := checkMem(ctx, "put-if-absent", p); err != nil {
		return err
	}
	c := cloneNonNil(data)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[p]; ok {
		return fmt.Errorf("storage: put-if-absent %q: %w", p, ErrExist)
	}
	m.objects[p] = memObject{data: c, modTime: m.clock()}
	return nil
}

// List returns the objects under prefix after startAfter, in ascending path order.
func (m *Memory) List(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: list %q: %w", prefix, err)
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	var out []ObjectInfo
	m.mu.RLock()
	for p, o := range m.objects {
		if strings.HasPrefix(p, prefix) && p > startAfter {
			out = append(out, ObjectInfo{Path: p, Size: int64(len(o.data)), ModTime: o.modTime})
		}
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Delete removes the object, or returns an error wrapping ErrNotExist.
func (m *Memory) Delete(ctx context.Context, p string) error {
	if err := checkMem(ctx, "delete", p); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[p]; !ok {
		return fmt.Errorf("storage: delete %q: %w", p, ErrNotExist)
	}
	delete(m.objects, p)
	return nil
}

// Stat describes the object, or returns an error wrapping ErrNotExist.
func (m *Memory) Stat(ctx context.Context, p string) (ObjectInfo, error) {
	if err := checkMem(ctx, "stat", p); err != nil {
		return ObjectInfo{}, err
	}
	m.mu.RLock()
	o, ok := m.objects[p]
	m.mu.RUnlock()
	if !ok {
		return ObjectInfo{}, fmt.Errorf("storage: stat %q: %w", p, ErrNotExist)
	}
	return ObjectInfo{Path: p, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// cloneNonNil copies b; an empty or nil b becomes a non-nil empty slice so Get of an
// empty object returns []byte{} rather than nil.
func cloneNonNil(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}

// memFile is the File returned by Memory.Open.
type memFile struct {
	r    *bytes.Reader
	path string
}

// ReadAt implements io.ReaderAt; bytes.Reader already returns io.EOF with short reads.
func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: read %q: negative offset %d", f.path, off)
	}
	n, err := f.r.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("storage: read %q at %d: %w", f.path, off, err)
	}
	return n, err
}

// Close releases nothing; it exists to satisfy File.
func (f *memFile) Close() error { return nil }

// Size is the object's length.
func (f *memFile) Size() int64 { return f.r.Size() }
