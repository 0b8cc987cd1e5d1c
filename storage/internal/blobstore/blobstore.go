// Package blobstore implements storage.Storage over a gocloud.dev/blob bucket: the
// object-store half shared by the S3, GCS and Azure backends, which differ only in how
// they open the bucket and in a few hooks (server-side start-after, suffix range reads,
// batch delete, which errors are worth retrying).
//
// Invariants (in addition to those of package storage):
//   - L2 on object stores: PutIfAbsent and Create/Commit are the store's conditional
//     create (S3 If-None-Match: *, GCS ifGenerationMatch=0, Azure If-None-Match: *).
//     Before the first conditional create a Store probes that the store honours the
//     condition (create a probe object twice; the second must fail) and refuses
//     conditional creates with ErrConditionalWritesIgnored when it does not, unless the
//     caller opted into single-writer mode, where a Stat before the write stands in
//     for the condition (not atomic; one writer only).
//   - Nothing partial: a streamed object is uploaded (multipart where large) and
//     becomes visible only when Commit completes it; Abort, a failed Write, a failed
//     Commit or a cancelled context abort the upload, so no partial object and no
//     dangling multipart upload remain (a killed process can leave the latter: see
//     the package storage documentation on lifecycle rules).
//   - Confinement: every path is validated before it becomes a key, and keys are the
//     store's prefix followed by the path, so nothing outside the prefix is touched.
//   - Transient failures (transient.go): they wrap storage.ErrTransient; reads cut in
//     transit are sent again; a conditional create outside _delta_log/ whose answer
//     was lost succeeds exactly when the object holds the bytes it sent; under
//     _delta_log/ "exists" is always storage.ErrExist, for the log to judge.
//   - Messages print the location through storage.RedactURL and SDK errors through
//     storage.RedactError: no credential is ever printed.
package blobstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/google/uuid"

	"github.com/skiplake/skiplake/storage"
)

// ErrConditionalWritesIgnored reports a store that accepted a second conditional create
// of the same object: it ignores If-None-Match (or its equivalent), so concurrent
// commits could overwrite each other. Such a store is usable only in single-writer mode.
var ErrConditionalWritesIgnored = errors.New("storage: the object store ignores conditional writes (If-None-Match); concurrent commits would overwrite each other")

// Hooks are the backend-specific parts of a Store. Every field is optional.
type Hooks struct {
	// StartAfter sets a server-side "start after key" on a list request (S3
	// ListObjectsV2 StartAfter, GCS StartOffset). The Store filters the results
	// client-side as well, so an inclusive start (GCS) is fine. Nil: the listing
	// starts at the prefix and is filtered client-side.
	StartAfter func(as func(any) bool, key string) error
	// TailRead returns the last n bytes of the object at key (all of it when it is
	// shorter) and the object's size with one request (an HTTP "Range: bytes=-n"), so
	// that Open learns the size and fetches the tail (a Parquet footer and page index)
	// at once. A missing object is an error wrapping storage.ErrNotExist; any other
	// error makes Open fall back to a metadata request. Nil: Open asks for the
	// attributes first and reads the tail on demand.
	TailRead func(ctx context.Context, key string, n int64) ([]byte, int64, error)
	// Transient classifies a backend error as transient (a 5xx or 429 answer) or not
	// (another 4xx answer); known=false leaves it to the generic rules (gocloud's error
	// codes, transport failures). See transient.go.
	Transient func(err error) (transient, known bool)
	// Exhausted reports an error after which the SDK has already retried as often as
	// it will (S3's MaxAttemptsError): the Store does not retry such a read again.
	Exhausted func(err error) bool
	// RetrySame reports an error after which the same conditional request should be
	// sent again (S3's 409 ConditionalRequestConflict: a concurrent conditional
	// write to the key was in flight). The retry's outcome decides.
	RetrySame func(err error) bool
	// DeleteBatch deletes up to BatchSize keys in one request and returns the keys
	// that failed with their errors (S3 DeleteObjects). Nil: parallel single deletes.
	DeleteBatch func(ctx context.Context, keys []string) (map[string]error, error)
	// BatchSize is the most keys DeleteBatch takes at once.
	BatchSize int
	// DeleteChecksExistence says the backend's single delete sends a HEAD first
	// (gocloud's S3 driver does, to report missing objects); only for counting.
	DeleteChecksExistence bool
	// AbortUploads aborts incomplete multipart uploads of key. Abort and failed
	// Commits call it (with a fresh context) after the SDK's own abort, because a
	// CreateMultipartUpload cut short by cancellation can leave an upload the SDK
	// never learned the id of. Nil: nothing beyond the SDK's abort.
	AbortUploads func(ctx context.Context, key string) error
	// AbortStale aborts incomplete multipart uploads of keys starting with prefix
	// that were started before cutoff, and returns how many. Nil: the store keeps no
	// partial uploads (GCS, Azure expire theirs).
	AbortStale func(ctx context.Context, prefix string, cutoff time.Time) (int, error)
}

// Options configures a Store. The zero value of every field but Bucket works.
type Options struct {
	// Bucket is the opened bucket; the Store owns it and closes it in Close.
	Bucket *blob.Bucket
	// Prefix is prepended to every path: "" or a key prefix ending in '/'.
	Prefix string
	// Location names the store in messages (a URL without credentials).
	Location string
	// Hooks are the backend's specific parts.
	Hooks Hooks
	// SingleWriter skips the conditional-write probe and falls back to a Stat before
	// each conditional create, which is not atomic: only for stores that ignore
	// conditional writes, with one writer at a time. A warning is printed once.
	SingleWriter bool
	// TailSize is how many bytes Open reads from the end of an object speculatively
	// (Parquet footer and page index). Default 1 MiB.
	TailSize int64
	// PartSize is the upload buffer and multipart part size. Default: the SDK's.
	PartSize int
	// Parallelism bounds the requests DeleteMany has in flight. Default 16.
	Parallelism int
	// Warn receives warnings (single-writer mode). Default: standard error.
	Warn func(msg string)
	// OnClose, if set, runs after the bucket is closed (a client the backend owns).
	OnClose func() error
}

// defaultTailSize is Options.TailSize's default: a footer with a page index for a few
// hundred columns and row groups fits, and one 1 MiB GET costs about what a 64 KiB GET
// costs on an object store (latency dominates).
const defaultTailSize = 1 << 20

// Store is a storage.Storage over a gocloud bucket. It implements storage.Creator and
// storage.BatchDeleter. It is safe for concurrent use.
type Store struct {
	opts Options
	b    *blob.Bucket

	reqs storage.Counters

	probeMu   sync.Mutex
	probeDone bool
	probeErr  error // sticky only for ErrConditionalWritesIgnored
	warnOnce  sync.Once
}

// New returns a Store. The caller has validated the prefix.
func New(opts Options) *Store {
	if opts.TailSize <= 0 {
		opts.TailSize = defaultTailSize
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 16
	}
	if opts.Warn == nil {
		opts.Warn = func(msg string) { fmt.Fprintln(os.Stderr, msg) }
	}
	return &Store{opts: opts, b: opts.Bucket}
}

// String names the store (its URL without credentials).
func (s *Store) String() string { return s.opts.Location }

// URL returns the store's location URL (without credentials).
func (s *Store) URL() string { return s.opts.Location }

// Close closes the bucket.
func (s *Store) Close() error {
	err := s.b.Close()
	if s.opts.OnClose != nil {
		err = errors.Join(err, s.opts.OnClose())
	}
	if err != nil {
		return fmt.Errorf("storage: close %s: %w", s.opts.Location, err)
	}
	return nil
}

// Bucket returns the underlying bucket (for backend-specific tests and tools).
func (s *Store) Bucket() *blob.Bucket { return s.b }

func (s *Store) key(p string) string { return s.opts.Prefix + p }

// Requests returns the requests the store has sent (storage.RequestCounter). A
// multipart upload counts as one PUT; a delete on S3 counts a HEAD and a DELETE
// (gocloud checks existence first).
func (s *Store) Requests() storage.RequestCounts { return s.reqs.Snapshot() }

// check validates the context and an object path for operation op.
func (s *Store) check(ctx context.Context, op, p string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: %s %q: %w", op, p, err)
	}
	return storage.ValidatePath(p)
}

// mapErr wraps a bucket error for op on p: NotFound becomes storage.ErrNotExist, a
// failed precondition storage.ErrExist, a done context its ctx.Err(), and a transient
// failure (transient.go) storage.ErrTransient besides the error itself.
func (s *Store) mapErr(ctx context.Context, op, p string, err error) error {
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("storage: %s %q in %s: %w", op, p, s.opts.Location, storage.ErrNotExist)
	case gcerrors.FailedPrecondition:
		return fmt.Errorf("storage: %s %q in %s: %w", op, p, s.opts.Location, storage.ErrExist)
	}
	err = storage.RedactError(err) // the SDK's message may print the endpoint's URL
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("storage: %s %q in %s: %w (%v)", op, p, s.opts.Location, cerr, err)
	}
	if s.transient(err) {
		return fmt.Errorf("storage: %s %q in %s: %w: %w", op, p, s.opts.Location, storage.ErrTransient, err)
	}
	return fmt.Errorf("storage: %s %q in %s: %w", op, p, s.opts.Location, err)
}

// modTime truncates object-store times to whole seconds: listings and HEAD responses
// of one object report the same second but not always the same sub-second digits
// (S3 lists milliseconds, HEAD's Last-Modified has seconds).
func modTime(t time.Time) time.Time { return t.Truncate(time.Second) }

// Get returns the whole object in one request (sent again when it fails in transit:
// transient.go).
func (s *Store) Get(ctx context.Context, p string) ([]byte, error) {
	if err := s.check(ctx, "get", p); err != nil {
		return nil, err
	}
	var data []byte
	err := s.retryRead(ctx, func() error {
		var err error
		data, err = s.b.ReadAll(ctx, s.key(p))
		s.reqs.For(ctx).Get(int64(len(data)))
		return err
	})
	if err != nil {
		return nil, s.mapErr(ctx, "get", p, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Put writes the object in one request (a multipart upload for large objects),
// replacing any previous one. Object stores never expose a partial object.
func (s *Store) Put(ctx context.Context, p string, data []byte) error {
	if err := s.check(ctx, "put", p); err != nil {
		return err
	}
	s.reqs.For(ctx).Put(int64(len(data)))
	if err := s.b.WriteAll(ctx, s.key(p), data, s.writerOptions(false)); err != nil {
		return s.mapErr(ctx, "put", p, err)
	}
	return nil
}

func (s *Store) writerOptions(ifNotExist bool) *blob.WriterOptions {
	return &blob.WriterOptions{
		ContentType: "application/octet-stream",
		IfNotExist:  ifNotExist,
		BufferSize:  s.opts.PartSize,
	}
}

// mapCreateErr maps the error of a conditional create. A create that failed without
// an answer from the store (a reset connection, the SDK's retries spent) while the
// object now exists is ErrExist: a store may answer a failed If-None-Match and close
// the connection before it has read the request body, and the client, still sending,
// sees only the reset. The object may also be this create's own, landed before the
// answer was lost; a caller that must know reads it back, as the log's commit does for
// every ErrExist. One HEAD, only on such failures.
func (s *Store) mapCreateErr(ctx context.Context, op, p string, err error) error {
	if c := gcerrors.Code(err); c != gcerrors.Unknown && c != gcerrors.Internal {
		return s.mapErr(ctx, op, p, err) // the store answered: its answer stands
	}
	if ctx.Err() != nil || (s.opts.Hooks.RetrySame != nil && s.opts.Hooks.RetrySame(err)) {
		return s.mapErr(ctx, op, p, err)
	}
	s.reqs.For(ctx).Head()
	if _, aerr := s.b.Attributes(ctx, s.key(p)); aerr == nil {
		return fmt.Errorf("storage: %s %q in %s: %w (the conditional create failed in transit: %v)", op, p, s.opts.Location, storage.ErrExist, err)
	}
	return s.mapErr(ctx, op, p, err)
}

// PutIfAbsent creates the object with the store's conditional create; see the
// package documentation for the probe and single-writer mode, and transient.go for how
// a create recognises its own retried request.
func (s *Store) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if err := s.check(ctx, "put-if-absent", p); err != nil {
		return err
	}
	if err := s.ensureConditional(ctx); err != nil {
		return fmt.Errorf("storage: put-if-absent %q in %s: %w", p, s.opts.Location, err)
	}
	if err := s.singleWriterCheck(ctx, "put-if-absent", p); err != nil {
		return err
	}
	err := s.retrySame(ctx, func() error {
		s.reqs.For(ctx).Put(int64(len(data)))
		if err := s.b.WriteAll(ctx, s.key(p), data, s.writerOptions(true)); err != nil {
			return s.mapCreateErr(ctx, "put-if-absent", p, err)
		}
		return nil
	})
	return s.settleCreate(ctx, "put-if-absent", p, int64(len(data)), sha256.Sum256(data), err)
}

// singleWriterCheck stands in for the ignored condition in single-writer mode.
func (s *Store) singleWriterCheck(ctx context.Context, op, p string) error {
	if !s.opts.SingleWriter {
		return nil
	}
	s.reqs.For(ctx).Head()
	_, err := s.b.Attributes(ctx, s.key(p))
	if err == nil {
		return fmt.Errorf("storage: %s %q in %s: %w", op, p, s.opts.Location, storage.ErrExist)
	}
	if gcerrors.Code(err) != gcerrors.NotFound {
		return s.mapErr(ctx, op, p, err)
	}
	return nil
}

// retrySame runs a conditional write, sending it again (up to 6 times, with jittered
// exponential backoff from 50 ms) while the backend says the same request should be
// retried. Transient transport errors are retried by the SDKs themselves.
func (s *Store) retrySame(ctx context.Context, do func() error) error {
	err := do()
	for attempt := 0; attempt < 5 && err != nil && s.opts.Hooks.RetrySame != nil && s.opts.Hooks.RetrySame(err); attempt++ {
		d := time.Duration(50<<attempt)*time.Millisecond + time.Duration(rand.Int64N(int64(25*time.Millisecond)))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while retrying after: %v)", ctx.Err(), err)
		case <-t.C:
		}
		err = do()
	}
	return err
}

// ensureConditional runs the conditional-write probe once per Store (see the package
// documentation). A probe that fails for another reason (network, permissions) is not
// remembered: the next conditional create tries again.
func (s *Store) ensureConditional(ctx context.Context) error {
	if s.opts.SingleWriter {
		s.warnOnce.Do(func() {
			s.opts.Warn(fmt.Sprintf("skiplake: WARNING: %s is in single-writer mode (single_writer=true): commits are not atomic; "+
				"a second concurrent writer (this program or another engine) can overwrite commits and lose data", s.opts.Location))
		})
		return nil
	}
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.probeDone {
		return s.probeErr
	}
	id := uuid.NewString()
	path := "_delta_log/.skiplake-conditional-probe-" + id
	first := []byte("skiplake conditional-write probe, first create, " + id)
	second := []byte("skiplake conditional-write probe, second create, " + id)
	ignored, err := s.probe(ctx, path, first, second)
	s.countDelete(ctx)
	derr := s.b.Delete(context.WithoutCancel(ctx), s.key(path))
	if derr != nil && gcerrors.Code(derr) != gcerrors.NotFound {
		s.opts.Warn(fmt.Sprintf("skiplake: could not delete the probe object %s in %s: %v", path, s.opts.Location, storage.RedactError(derr)))
	}
	switch {
	case err != nil:
		return fmt.Errorf("probing conditional writes: %w", err)
	case ignored:
		s.probeDone, s.probeErr = true, fmt.Errorf("%w (a second conditional create of the probe object %s succeeded); "+
			"use a store that honours If-None-Match, or add single_writer=true to the location if exactly one process ever writes the table", ErrConditionalWritesIgnored, path)
		return s.probeErr
	}
	s.probeDone = true
	return nil
}

// probe creates the probe object at path with the bytes first, then tries to create
// it again with second: ignored reports that the second create replaced the object.
// Each step is decided by the store's answer or, when the answer is lost (the SDK's
// retry of an applied create sees "exists"; a reset connection), by reading the object
// back: the bytes are unique to this probe, so the object holding first proves the
// first create landed, and holding second proves the store ignored the condition. A
// step that stays undecided is tried again while its failure is transient.
func (s *Store) probe(ctx context.Context, path string, first, second []byte) (ignored bool, err error) {
	key := s.key(path)
	opts := s.writerOptions(true)
	readBack := func() ([]byte, error) {
		var data []byte
		err := s.retryRead(ctx, func() error {
			var err error
			data, err = s.b.ReadAll(ctx, key)
			s.reqs.For(ctx).Get(int64(len(data)))
			return err
		})
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, nil
		}
		return data, err
	}
	for attempt := 0; ; attempt++ {
		s.reqs.For(ctx).Put(int64(len(first)))
		werr := s.b.WriteAll(ctx, key, first, opts)
		if werr == nil {
			break
		}
		if ctx.Err() != nil {
			return false, s.mapErr(ctx, "put-if-absent", path, werr)
		}
		got, rerr := readBack()
		if rerr == nil && bytes.Equal(got, first) {
			break // this create's own, its answer lost
		}
		if rerr == nil && got != nil {
			return false, fmt.Errorf("storage: the probe object %s in %s holds bytes this process did not write", path, s.opts.Location)
		}
		if !s.transient(werr) || attempt+1 >= readAttempts {
			return false, s.mapErr(ctx, "put-if-absent", path, werr)
		}
		if err := sleep(ctx, backoff(readBackoff, attempt)); err != nil {
			return false, s.mapErr(ctx, "put-if-absent", path, werr)
		}
	}
	for attempt := 0; ; attempt++ {
		s.reqs.For(ctx).Put(int64(len(second)))
		werr := s.b.WriteAll(ctx, key, second, opts)
		switch {
		case werr == nil:
			return true, nil
		case gcerrors.Code(werr) == gcerrors.FailedPrecondition:
			return false, nil
		case s.opts.Hooks.RetrySame != nil && s.opts.Hooks.RetrySame(werr):
			return false, nil // the store saw a conditional conflict: it evaluates the condition
		case ctx.Err() != nil:
			return false, s.mapErr(ctx, "put-if-absent", path, werr)
		}
		got, rerr := readBack()
		if rerr == nil && bytes.Equal(got, second) {
			return true, nil // the second create replaced the object, its answer lost
		}
		if !s.transient(werr) || attempt+1 >= readAttempts {
			return false, s.mapErr(ctx, "put-if-absent", path, werr)
		}
		if err := sleep(ctx, backoff(readBackoff, attempt)); err != nil {
			return false, s.mapErr(ctx, "put-if-absent", path, werr)
		}
	}
}

// AbortUploadsBefore aborts the incomplete multipart uploads under the store's prefix
// started before cutoff (storage.UploadAborter); backends without such uploads report 0.
func (s *Store) AbortUploadsBefore(ctx context.Context, cutoff time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.opts.Hooks.AbortStale == nil {
		return 0, nil
	}
	n, err := s.opts.Hooks.AbortStale(ctx, s.opts.Prefix, cutoff)
	if err != nil {
		return n, fmt.Errorf("storage: aborting stale uploads in %s: %w", s.opts.Location, err)
	}
	return n, nil
}

// Delete removes the object, or reports storage.ErrNotExist.
func (s *Store) Delete(ctx context.Context, p string) error {
	if err := s.check(ctx, "delete", p); err != nil {
		return err
	}
	s.countDelete(ctx)
	if err := s.b.Delete(ctx, s.key(p)); err != nil {
		return s.mapErr(ctx, "delete", p, err)
	}
	return nil
}

func (s *Store) countDelete(ctx context.Context) {
	if s.opts.Hooks.DeleteChecksExistence {
		s.reqs.For(ctx).Head()
	}
	s.reqs.For(ctx).Delete()
}

// Stat describes the object (one HEAD request).
func (s *Store) Stat(ctx context.Context, p string) (storage.ObjectInfo, error) {
	if err := s.check(ctx, "stat", p); err != nil {
		return storage.ObjectInfo{}, err
	}
	var a *blob.Attributes
	err := s.retryRead(ctx, func() error {
		s.reqs.For(ctx).Head()
		var err error
		a, err = s.b.Attributes(ctx, s.key(p))
		return err
	})
	if err != nil {
		return storage.ObjectInfo{}, s.mapErr(ctx, "stat", p, err)
	}
	return storage.ObjectInfo{Path: p, Size: a.Size, ModTime: modTime(a.ModTime)}, nil
}

// listPageSize is the most keys one list request asks for (S3's maximum).
const listPageSize = 1000

// List returns the objects under prefix after startAfter in ascending order, paging
// through the listing (1,000 keys a request on S3) and starting server-side after
// startAfter where the backend can.
func (s *Store) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: list %q: %w", prefix, err)
	}
	if err := storage.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	lo := &blob.ListOptions{Prefix: s.key(prefix)}
	after := ""
	if startAfter != "" && startAfter >= prefix {
		after = s.key(startAfter)
	}
	if after != "" && s.opts.Hooks.StartAfter != nil {
		lo.BeforeList = func(as func(any) bool) error { return s.opts.Hooks.StartAfter(as, after) }
	}
	var out []storage.ObjectInfo
	token := blob.FirstPageToken
	for {
		var (
			objs []*blob.ListObject
			next []byte
		)
		err := s.retryRead(ctx, func() error {
			s.reqs.For(ctx).List()
			var err error
			objs, next, err = s.b.ListPage(ctx, token, listPageSize, lo)
			return err
		})
		if err != nil {
			return nil, s.mapErr(ctx, "list", prefix, err)
		}
		for _, o := range objs {
			if o.IsDir || o.Key <= after || !strings.HasPrefix(o.Key, s.opts.Prefix) {
				continue
			}
			p := strings.TrimPrefix(o.Key, s.opts.Prefix)
			if storage.ValidatePath(p) != nil {
				continue // "dir/" markers made by consoles and other tools are not objects
			}
			out = append(out, storage.ObjectInfo{Path: p, Size: o.Size, ModTime: modTime(o.ModTime)})
		}
		if len(next) == 0 {
			break
		}
		token = next
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// DeleteMany deletes the objects in batches (one request per batch where the backend
// has a batch delete, S3 DeleteObjects) with at most Options.Parallelism requests in
// flight. It returns one error per path, nil for deleted objects; a missing object
// is reported as storage.ErrNotExist only by backends without a batch delete.
func (s *Store) DeleteMany(ctx context.Context, paths []string) []error {
	errs := make([]error, len(paths))
	idx := make(map[string]int, len(paths))
	var keys []string
	for i, p := range paths {
		if err := s.check(ctx, "delete", p); err != nil {
			errs[i] = err
			continue
		}
		idx[s.key(p)] = i
		keys = append(keys, s.key(p))
	}
	h := s.opts.Hooks
	if h.DeleteBatch == nil || h.BatchSize <= 0 {
		storage.ForEachLimit(ctx, len(keys), s.opts.Parallelism, func(ctx context.Context, j int) {
			i := idx[keys[j]]
			errs[i] = s.Delete(ctx, paths[i])
		})
		return errs
	}
	var batches [][]string
	for len(keys) > 0 {
		n := min(len(keys), h.BatchSize)
		batches = append(batches, keys[:n])
		keys = keys[n:]
	}
	storage.ForEachLimit(ctx, len(batches), s.opts.Parallelism, func(ctx context.Context, j int) {
		if err := ctx.Err(); err != nil {
			for _, k := range batches[j] {
				errs[idx[k]] = fmt.Errorf("storage: delete %q: %w", paths[idx[k]], err)
			}
			return
		}
		s.reqs.For(ctx).Delete()
		failed, err := h.DeleteBatch(ctx, batches[j])
		for _, k := range batches[j] {
			i := idx[k]
			switch {
			case err != nil:
				errs[i] = s.mapErr(ctx, "delete", paths[i], err)
			case failed[k] != nil:
				errs[i] = s.mapErr(ctx, "delete", paths[i], failed[k])
			}
		}
	})
	return errs
}

// Create returns a streaming writer for a new object; see storage.Creator. The bytes
// are uploaded as they are written (multipart for large objects); Commit completes the
// upload with the conditional create, Abort (or a done context) aborts it.
func (s *Store) Create(ctx context.Context, p string) (storage.ObjectWriter, error) {
	if err := s.check(ctx, "create", p); err != nil {
		return nil, err
	}
	if err := s.ensureConditional(ctx); err != nil {
		return nil, fmt.Errorf("storage: create %q in %s: %w", p, s.opts.Location, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := s.b.NewWriter(wctx, s.key(p), s.writerOptions(true))
	if err != nil {
		cancel()
		return nil, s.mapErr(ctx, "create", p, err)
	}
	return &writer{s: s, ctx: ctx, cancel: cancel, w: w, path: p, sum: sha256.New()}, nil
}

// writer is the storage.ObjectWriter of Store.Create.
type writer struct {
	s      *Store
	ctx    context.Context // the Create context, checked by Commit
	cancel context.CancelFunc
	w      *blob.Writer // nil once ended
	path   string
	err    error     // first Write error, sticky
	n      int64     // bytes written
	sum    hash.Hash // SHA-256 of the bytes written, to recognise a retried create
}

func (w *writer) Write(b []byte) (int, error) {
	if w.w == nil {
		return 0, fmt.Errorf("storage: write %q: %w", w.path, fs.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.err = fmt.Errorf("storage: write %q: %w", w.path, err)
		return 0, w.err
	}
	n, err := w.w.Write(b)
	w.n += int64(n)
	w.sum.Write(b[:n])
	if err != nil {
		w.err = w.s.mapErr(w.ctx, "write", w.path, err)
		return n, w.err
	}
	return n, nil
}

// Commit completes the upload with the conditional create.
func (w *writer) Commit() error {
	if w.w == nil {
		return nil
	}
	bw := w.w
	w.w = nil
	if w.err != nil || w.ctx.Err() != nil {
		err := w.err
		if err == nil {
			err = fmt.Errorf("storage: commit %q: %w", w.path, w.ctx.Err())
		}
		w.abort(bw)
		return err
	}
	if err := w.s.singleWriterCheck(w.ctx, "commit", w.path); err != nil {
		w.abort(bw)
		return err
	}
	w.s.reqs.For(w.ctx).Put(w.n)
	err := bw.Close()
	w.cancel()
	if err != nil {
		w.sweep()
		var sum [sha256.Size]byte
		copy(sum[:], w.sum.Sum(nil))
		return w.s.settleCreate(w.ctx, "commit", w.path, w.n, sum, w.s.mapCreateErr(w.ctx, "commit", w.path, err))
	}
	return nil
}

// abort cancels the upload and sweeps leftovers.
func (w *writer) abort(bw *blob.Writer) {
	w.cancel()
	bw.Close() // aborts the upload: its context is cancelled
	w.sweep()
}

// sweep aborts multipart uploads of the key the SDK may have lost track of.
func (w *writer) sweep() {
	if w.s.opts.Hooks.AbortUploads == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 30*time.Second)
	defer cancel()
	if err := w.s.opts.Hooks.AbortUploads(ctx, w.s.key(w.path)); err != nil {
		w.s.opts.Warn(fmt.Sprintf("skiplake: could not abort the incomplete upload of %s in %s (a bucket lifecycle rule will): %v", w.path, w.s.opts.Location, err))
	}
}

// Abort cancels the upload; nothing is published.
func (w *writer) Abort() error {
	if w.w == nil {
		return nil
	}
	bw := w.w
	w.w = nil
	w.abort(bw)
	return nil
}

// Open returns a random-access view of the object. On backends with a TailRead hook
// (S3, GCS), Open is one GET of the object's last TailSize bytes, which tells the size and
// holds a Parquet footer and page index; elsewhere it is a HEAD and the tail is read on
// first use. Reads within the tail are served from memory; other reads are one ranged
// GET each. The File reads with the context given to Open.
func (s *Store) Open(ctx context.Context, p string) (storage.File, error) {
	if err := s.check(ctx, "open", p); err != nil {
		return nil, err
	}
	f := &file{s: s, ctx: ctx, path: p, key: s.key(p)}
	if s.opts.Hooks.TailRead != nil {
		var (
			data []byte
			size int64
		)
		err := s.retryRead(ctx, func() error {
			var err error
			data, size, err = s.opts.Hooks.TailRead(ctx, f.key, s.opts.TailSize)
			s.reqs.For(ctx).Get(int64(len(data)))
			return err
		})
		if err == nil {
			f.size = size
			f.tail = data
			f.tailOff = size - int64(len(data))
			f.tailLoaded = true
			return f, nil
		}
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("storage: open %q in %s: %w", p, s.opts.Location, err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("storage: open %q in %s: %w", p, s.opts.Location, cerr)
		}
		if s.transient(err) {
			return nil, s.mapErr(ctx, "open", p, err)
		}
		// Some stores refuse suffix ranges on empty objects (416); ask for the size.
	}
	var a *blob.Attributes
	err := s.retryRead(ctx, func() error {
		s.reqs.For(ctx).Head()
		var err error
		a, err = s.b.Attributes(ctx, f.key)
		return err
	})
	if err != nil {
		return nil, s.mapErr(ctx, "open", p, err)
	}
	f.size = a.Size
	f.tailOff = max(0, a.Size-s.opts.TailSize)
	return f, nil
}

// OpenSized is Open for a caller that knows the object's size (a data file whose
// size the log records): no request is made until the first read.
func (s *Store) OpenSized(ctx context.Context, p string, size int64) (storage.File, error) {
	if err := s.check(ctx, "open", p); err != nil {
		return nil, err
	}
	if size < 0 {
		return s.Open(ctx, p)
	}
	return &file{s: s, ctx: ctx, path: p, key: s.key(p), size: size, tailOff: max(0, size-s.opts.TailSize)}, nil
}

// SuffixReader returns a Hooks.TailRead for backends whose gocloud driver lets
// ReaderOptions.BeforeRead set the request's range: setRange receives the driver's As
// function and "bytes=-n".
func SuffixReader(b *blob.Bucket, setRange func(as func(any) bool, rng string) error) func(ctx context.Context, key string, n int64) ([]byte, int64, error) {
	return func(ctx context.Context, key string, n int64) ([]byte, int64, error) {
		r, err := b.NewRangeReader(ctx, key, 0, -1, &blob.ReaderOptions{
			BeforeRead: func(as func(any) bool) error { return setRange(as, "bytes=-"+strconv.FormatInt(n, 10)) },
		})
		if err != nil {
			if gcerrors.Code(err) == gcerrors.NotFound {
				return nil, 0, fmt.Errorf("%w: %v", storage.ErrNotExist, err)
			}
			return nil, 0, err
		}
		defer r.Close()
		size := r.Size()
		buf := make([]byte, min(n, size))
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, 0, err
		}
		return buf, size, nil
	}
}

// file is the storage.File of Store.Open.
type file struct {
	s    *Store
	ctx  context.Context
	path string
	key  string
	size int64

	mu         sync.Mutex
	tailOff    int64 // where the tail window starts
	tail       []byte
	tailLoaded bool
}

// ReadAt implements io.ReaderAt with ranged reads; a read that reaches the end of the
// object returns io.EOF with the bytes it read.
func (f *file) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: read %q: negative offset %d", f.path, off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := min(int64(len(b)), f.size-off)
	var err error
	if off >= f.tailOff {
		err = f.readTail(b[:want], off)
	} else {
		err = f.readRange(b[:want], off)
	}
	if err != nil {
		return 0, err
	}
	if want < int64(len(b)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

// readTail serves b from the tail window, loading it with one request the first time.
func (f *file) readTail(b []byte, off int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.tailLoaded {
		buf := make([]byte, f.size-f.tailOff)
		if err := f.readRange(buf, f.tailOff); err != nil {
			return err
		}
		f.tail, f.tailLoaded = buf, true
	}
	copy(b, f.tail[off-f.tailOff:])
	return nil
}

// readRange fills b from the object at off with one ranged GET.
func (f *file) readRange(b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	if err := f.ctx.Err(); err != nil {
		return fmt.Errorf("storage: read %q at %d: %w", f.path, off, err)
	}
	err := f.s.retryRead(f.ctx, func() error {
		f.s.reqs.For(f.ctx).Get(int64(len(b)))
		r, err := f.s.b.NewRangeReader(f.ctx, f.key, off, int64(len(b)), nil)
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.ReadFull(r, b)
		return err
	})
	if err != nil {
		return f.s.mapErr(f.ctx, fmt.Sprintf("read (at %d, %d bytes)", off, len(b)), f.path, err)
	}
	return nil
}

// Close releases the cached tail (a later ReadAt would fetch it again).
func (f *file) Close() error {
	f.mu.Lock()
	f.tail, f.tailLoaded = nil, false
	f.mu.Unlock()
	return nil
}

// Size is the object's length.
func (f *file) Size() int64 { return f.size }

// CommonParams takes the parameters every object-store backend understands out of a
// location URL: the path becomes the key prefix (validated like a storage path) and
// single_writer=true selects single-writer mode. It returns the options so far (Bucket
// and Hooks still unset) and the remaining query for the backend's own opener.
func CommonParams(u *url.URL) (Options, url.Values, error) {
	loc := redact(u)
	var opts Options
	opts.Location = loc
	q := u.Query()
	if v := q.Get("single_writer"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return opts, nil, fmt.Errorf("storage: %s: single_writer=%q: want true or false", loc, v)
		}
		opts.SingleWriter = b
		q.Del("single_writer")
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if err := storage.ValidatePath(p); err != nil {
			return opts, nil, fmt.Errorf("storage: %s: table path: %w", loc, err)
		}
		opts.Prefix = p + "/"
	}
	return opts, q, nil
}

// redact returns u as messages print it (storage.RedactURL).
func redact(u *url.URL) string { return storage.RedactURL(u) }
