package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

// Sentinel errors. Implementations wrap them with %w so callers test with errors.Is.
var (
	// ErrNotExist reports that the object does not exist.
	ErrNotExist = errors.New("storage: object does not exist")
	// ErrExist reports that PutIfAbsent found the object already present.
	ErrExist = errors.New("storage: object already exists")
	// ErrInvalidPath reports a path that is not a clean relative path inside the root
	// (absolute, contains "..", a backslash, a NUL byte, an empty element, ...).
	ErrInvalidPath = errors.New("storage: invalid path")
	// ErrTransient reports a failure that may not recur: the store answered 5xx or 429,
	// or the request or its response failed in transit (refused, reset, timed out, cut
	// short), after the retries of the backend (see each backend). Running the operation
	// again later may succeed; nothing is known to be wrong with the data.
	ErrTransient = errors.New("storage: temporary failure")
	// ErrCredentialsInURL reports a location with user information ("user:password@"),
	// in the URL itself or in a URL nested in a parameter (endpoint=). Credentials come
	// from each provider's standard chain only.
	ErrCredentialsInURL = errors.New("storage: credentials in the URL are not accepted")
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	// Path is the object's path relative to the store root, with '/' separators.
	Path string
	// Size is the length of the object in bytes.
	Size int64
	// ModTime is the object's last modification time.
	ModTime time.Time
}

// Storage is where a table's bytes live. Paths are relative to the store's root,
// use '/' as separator, and are validated by every method: a path that would escape
// the root is rejected with ErrInvalidPath and never touched.
//
// Implementations are safe for concurrent use by multiple goroutines.
type Storage interface {
	// Get returns the whole object.
	Get(ctx context.Context, path string) ([]byte, error)
	// Open returns a random-access view of the object (for Parquet footers and
	// page ranges) and its size. The caller closes it. ReadAt follows io.ReaderAt:
	// a short read always comes with an error.
	Open(ctx context.Context, path string) (File, error)
	// Put writes the object, replacing any previous one. The object is durable when
	// Put returns nil; readers never observe a partially written object.
	Put(ctx context.Context, path string, data []byte) error
	// PutIfAbsent atomically creates the object only if no object exists at path.
	// If one does, it returns an error wrapping ErrExist and leaves it untouched.
	// Exactly one of several concurrent callers for the same path succeeds.
	PutIfAbsent(ctx context.Context, path string, data []byte) error
	// List returns the objects whose path starts with prefix and sorts strictly
	// after startAfter (lexicographic byte order; "" means from the beginning),
	// in ascending path order. Directories are not objects.
	List(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error)
	// Delete removes the object. Deleting a missing object returns an error wrapping ErrNotExist.
	Delete(ctx context.Context, path string) error
	// Stat describes the object, or returns an error wrapping ErrNotExist.
	Stat(ctx context.Context, path string) (ObjectInfo, error)
}

// File is a random-access, read-only view of one object.
type File interface {
	io.ReaderAt
	io.Closer
	// Size is the object's length in bytes.
	Size() int64
}

// Rooted is an optional capability of stores whose objects live under a location of
// their own, such as a local directory. Deletion vectors stored by absolute path
// ('p' descriptors) are resolved against it.
type Rooted interface {
	// Root returns the absolute location of the store's root.
	Root() string
}

// RootOf returns the root of s when s is Rooted, and "" otherwise.
func RootOf(s Storage) string {
	if r, ok := s.(Rooted); ok {
		return r.Root()
	}
	return ""
}
