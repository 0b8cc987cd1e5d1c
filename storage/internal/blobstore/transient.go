package blobstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/skiplake/skiplake/storage"
)

// Transient failures. Object stores fail in ways that do not recur: a 5xx or 429
// answer, a connection reset or refused, a response cut mid-body, a response lost
// after the request was applied. Three rules handle them:
//
//  1. Classification (transient): such failures wrap storage.ErrTransient, so callers
//     (the CLI's exit status 75) tell them from answers that a retry cannot change
//     (403, 404, 412, a bad request).
//  2. Reads are retried here (retryRead): the SDKs retry a request until its response
//     starts, but a body cut mid-way comes back to the caller, and gocloud's readers
//     do not retry. Get, Stat, List, Open and ranged reads are sent again, up to
//     readAttempts times with jittered exponential backoff, while the failure is
//     transient and the SDK has not already spent its own attempts on it
//     (Hooks.Exhausted); a done context ends the wait.
//  3. A conditional create recognises its own retried request (ownCreate): when the
//     response to a create that the store applied is lost, the SDK sends it again and
//     the store answers "exists" (412), or the connection fails and the object is
//     found. For objects outside _delta_log/ (data files, deletion vectors, Bloom
//     index and layout files: every name holds a fresh UUID) the create reads the
//     object back and reports success exactly when its bytes are the ones it sent
//     (size and SHA-256). Commit files are never judged here: under _delta_log/
//     "exists" is reported as storage.ErrExist, because it usually means a concurrent
//     writer won the version; the log proves or refutes its own commit by reading the
//     version back and comparing the commit's txnId, a fresh random UUID, with its own
//     (log/txn.go). A byte comparison would also be sound there (the txnId makes
//     every commit's bytes unique), but the log's check is the one that decides
//     conflicts, so it stays the only one.

// readAttempts is how often a read is sent in all (see rule 2).
const readAttempts = 4

// readBackoff is the first wait between read attempts; it doubles each time.
const readBackoff = 100 * time.Millisecond

// transient reports whether err is a failure that may not recur (rule 1).
func (s *Store) transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if h := s.opts.Hooks.Transient; h != nil {
		if t, known := h(err); known {
			return t
		}
	}
	switch gcerrors.Code(err) {
	case gcerrors.Internal, gcerrors.ResourceExhausted, gcerrors.DeadlineExceeded:
		return true
	case gcerrors.NotFound, gcerrors.FailedPrecondition, gcerrors.PermissionDenied, gcerrors.InvalidArgument,
		gcerrors.AlreadyExists, gcerrors.Unimplemented:
		return false
	}
	return TransportFailure(err)
}

// TransportFailure reports an error of the connection rather than an answer of the
// store: a network error (refused, reset, timed out, DNS), a broken pipe, or a response
// body that ended early.
func TransportFailure(err error) bool {
	var (
		oe *net.OpError
		de *net.DNSError
		ne net.Error // syscall.Errno is one too: only its timeouts count here
	)
	switch {
	case errors.As(err, &oe), errors.As(err, &de), errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return true
	}
	// SDKs that format a transport error into their own (%v, not %w).
	msg := err.Error()
	for _, s := range []string{"connection reset", "broken pipe", "unexpected EOF", "connection refused", "http2: server sent GOAWAY", "use of closed network connection"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retryRead runs the read do (which counts its own requests), sending it again while
// it fails transiently and the SDK has not already retried the failure (rule 2). It
// returns do's last error, unmapped.
func (s *Store) retryRead(ctx context.Context, do func() error) error {
	err := do()
	for attempt := 1; attempt < readAttempts && err != nil && s.transient(err) && !s.exhausted(err); attempt++ {
		if werr := sleep(ctx, backoff(readBackoff, attempt-1)); werr != nil {
			return err
		}
		err = do()
	}
	return err
}

// exhausted reports an error after which the SDK already retried as often as it will.
func (s *Store) exhausted(err error) bool {
	return s.opts.Hooks.Exhausted != nil && s.opts.Hooks.Exhausted(err)
}

// backoff is base·2^attempt with up to 50% jitter, capped at 5 s.
func backoff(base time.Duration, attempt int) time.Duration {
	d := base << min(attempt, 6)
	d = min(d, 5*time.Second)
	return d + time.Duration(rand.Int64N(int64(d/2)+1))
}

// sleep waits d or until ctx is done (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// logPath reports a path under _delta_log/, whose conditional creates are judged by
// the log, never here (rule 3).
func logPath(p string) bool { return strings.HasPrefix(p, "_delta_log/") }

// createOutcome is what reading an object back after an ambiguous create found.
type createOutcome int

const (
	createdNone  createOutcome = iota // no object: the create did not land
	createdMine                       // the object holds exactly the bytes sent
	createdOther                      // another object is there
)

// ownCreate reads p back after a conditional create of size bytes with SHA-256 sum
// failed ambiguously (rule 3). It never decides for paths under _delta_log/
// (createdOther when an object is there).
func (s *Store) ownCreate(ctx context.Context, p string, size int64, sum [sha256.Size]byte) (createOutcome, error) {
	var a *blob.Attributes
	err := s.retryRead(ctx, func() error {
		s.reqs.For(ctx).Head()
		var err error
		a, err = s.b.Attributes(ctx, s.key(p))
		return err
	})
	switch {
	case gcerrors.Code(err) == gcerrors.NotFound:
		return createdNone, nil
	case err != nil:
		return createdNone, s.mapErr(ctx, "read back", p, err)
	case logPath(p) || a.Size != size:
		return createdOther, nil
	}
	var data []byte
	err = s.retryRead(ctx, func() error {
		var err error
		data, err = s.b.ReadAll(ctx, s.key(p))
		s.reqs.For(ctx).Get(int64(len(data)))
		return err
	})
	if err != nil {
		return createdNone, s.mapErr(ctx, "read back", p, err)
	}
	if got := sha256.Sum256(data); int64(len(data)) == size && bytes.Equal(got[:], sum[:]) {
		return createdMine, nil
	}
	return createdOther, nil
}

// settleCreate decides a conditional create of p that failed with err (already
// mapped), by reading the object back for paths outside _delta_log/ (rule 3): nil when
// the object holds exactly the bytes sent, storage.ErrExist when it holds others, err
// when there is none or it cannot be read.
func (s *Store) settleCreate(ctx context.Context, op, p string, size int64, sum [sha256.Size]byte, err error) error {
	if err == nil || logPath(p) || ctx.Err() != nil {
		return err
	}
	if !errors.Is(err, storage.ErrExist) && !errors.Is(err, storage.ErrTransient) && !errors.Is(err, storage.ErrNotExist) {
		// The store refused the request (403, 400): nothing was created. (ErrNotExist:
		// a multipart completion sent again after it succeeded finds no upload.)
		return err
	}
	got, rerr := s.ownCreate(ctx, p, size, sum)
	switch {
	case rerr != nil:
		return fmt.Errorf("%w (reading it back: %v)", err, rerr)
	case got == createdMine:
		return nil
	case got == createdOther:
		if errors.Is(err, storage.ErrExist) {
			return err
		}
		return fmt.Errorf("storage: %s %q in %s: %w (the create failed in transit: %v)", op, p, s.opts.Location, storage.ErrExist, err)
	}
	return err
}
