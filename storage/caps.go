package storage

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// BatchDeleter is implemented by stores that delete many objects with few requests
// (S3 DeleteObjects: up to 1,000 keys a request) and in parallel. It is an optional
// capability: use DeleteMany, which falls back to parallel Deletes.
type BatchDeleter interface {
	// DeleteMany deletes the objects and returns one error per path (nil where the
	// object was deleted). It never stops at the first failure. Whether a missing
	// object is an error depends on the store (S3's batch delete does not report it);
	// callers that care use Stat first.
	DeleteMany(ctx context.Context, paths []string) []error
}

// DefaultDeleteParallelism is how many Delete calls DeleteMany's fallback has in
// flight at once.
const DefaultDeleteParallelism = 16

// DeleteMany deletes paths from s: s.DeleteMany when s implements BatchDeleter, else
// Delete calls with up to DefaultDeleteParallelism in flight. It returns one error per
// path (nil on success); once ctx is done, the remaining paths get ctx's error.
func DeleteMany(ctx context.Context, s Storage, paths []string) []error {
	if bd, ok := s.(BatchDeleter); ok {
		return bd.DeleteMany(ctx, paths)
	}
	errs := make([]error, len(paths))
	ForEachLimit(ctx, len(paths), DefaultDeleteParallelism, func(ctx context.Context, i int) {
		errs[i] = s.Delete(ctx, paths[i])
	})
	return errs
}

// ForEachLimit calls fn(ctx, i) for i in [0, n) with at most limit calls running at
// once (limit <= 0 means 1) and returns when all have returned. Once ctx is done, calls
// not yet started still run but see the done ctx, so fn must check it (every Storage
// method does).
func ForEachLimit(ctx context.Context, n, limit int, fn func(ctx context.Context, i int)) {
	if limit <= 0 {
		limit = 1
	}
	limit = min(limit, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range limit {
		wg.Go(func() {
			for i := range next {
				fn(ctx, i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// SizedOpener is implemented by stores where knowing an object's size saves a
// request: an object store's Open must otherwise ask for it (a HEAD, or a speculative
// tail read). Use OpenSized, which falls back to Open.
type SizedOpener interface {
	// OpenSized is Open for an object whose size the caller knows (the Delta log
	// records every data file's size). A wrong size makes reads fail or come up
	// short with an error; it never makes them return other bytes.
	OpenSized(ctx context.Context, path string, size int64) (File, error)
}

// OpenSized opens path in s, passing the known size to stores that implement
// SizedOpener. size < 0 means unknown.
func OpenSized(ctx context.Context, s Storage, path string, size int64) (File, error) {
	if so, ok := s.(SizedOpener); ok && size >= 0 {
		return so.OpenSized(ctx, path, size)
	}
	return s.Open(ctx, path)
}

// Describe returns a short description of a store for messages: its String method
// (a directory, a URL without credentials), else its type.
func Describe(s Storage) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	return fmt.Sprintf("%T", s)
}

// UploadAborter is implemented by stores that keep the parts of incomplete multipart
// uploads (S3): a process killed while streaming a data file leaves an upload that no
// listing shows but the store keeps (and bills) until it is aborted.
type UploadAborter interface {
	// AbortUploadsBefore aborts the incomplete multipart uploads under the store's
	// root that were started before cutoff and returns how many it aborted.
	AbortUploadsBefore(ctx context.Context, cutoff time.Time) (int, error)
}

// AbortUploadsBefore aborts s's incomplete multipart uploads started before cutoff
// when s is an UploadAborter; other stores have none (0, nil). VACUUM calls it with its
// retention cutoff, so an upload still in flight is never touched.
func AbortUploadsBefore(ctx context.Context, s Storage, cutoff time.Time) (int, error) {
	if ua, ok := s.(UploadAborter); ok {
		return ua.AbortUploadsBefore(ctx, cutoff)
	}
	return 0, nil
}
