package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Exit statuses (docs/cli.md, "Exit status"): what a scheduler can act on. maintain
// adds exitWorkRemains (3) and exitTaskFailed (4).
const (
	exitOK       = 0
	exitRefused  = 1  // the table, the data or the request was refused: retrying cannot help
	exitUsage    = 2  // the command line is wrong; nothing was written
	exitTempFail = 75 // EX_TEMPFAIL (sysexits.h): it may succeed if run again later
)

// exitCode classifies a command's error into its exit status. It is the one place
// that decides whether a failure is worth retrying: only failures that may not recur
// exit 75, everything else that is not a usage error exits 1.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	if retryable(err) {
		return exitTempFail
	}
	return exitRefused
}

// retryable reports a failure that running the command again may not meet:
//   - a commit conflict after the built-in retries (log.ConflictError: a concurrent
//     commit changed what this one read or removes; log.ErrTooManyRetries), or a
//     commit whose outcome could not be learned (log.ErrCommitUnknown: a retry with
//     --txn-app-id/--txn-version is safe, see the README);
//   - a storage or network failure (storage.ErrTransient: a 5xx or 429 answer, a
//     refused, reset or timed-out connection, a response cut short, after the
//     store's own retries), also where a library reports it without the sentinel (a
//     net.Error, a full disk, too many open files);
//   - a timeout or an interruption (context.DeadlineExceeded, context.Canceled).
//
// Corrupt data, a missing data file, a schema mismatch, an unsupported feature, a
// refused argument or permission are not retryable.
func retryable(err error) bool {
	var (
		ce *log.ConflictError
		oe *net.OpError
		de *net.DNSError
		ne net.Error // syscall.Errno is one too: only its timeouts count here
	)
	switch {
	case errors.Is(err, storage.ErrTransient),
		errors.Is(err, log.ErrTooManyRetries), errors.Is(err, log.ErrCommitUnknown), errors.As(err, &ce),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	case errors.As(err, &oe), errors.As(err, &de), errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EMFILE),
		errors.Is(err, syscall.ENFILE), errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		return true
	}
	return false
}

// redactor removes what may be a credential from the messages the CLI prints on
// standard error: the user information of any URL (storage.RedactText), and each
// secret of the locations given as arguments (storage.LocationSecrets: user
// information, values of query parameters off the allow-list) wherever a library
// printed it its own way. Locations in the CLI's own messages are already printed
// through storage.RedactLocation; this is the last line of defence.
type redactor struct {
	secrets []string // longest first
}

// minSecretLen is the shortest argument secret replaced in free text: shorter strings
// would hit ordinary words (a two-letter password is caught where it can be parsed:
// in URLs, by storage.RedactText).
const minSecretLen = 3

func newRedactor(args []string) *redactor {
	r := &redactor{}
	for _, a := range args {
		if !strings.Contains(a, ":") {
			continue
		}
		for _, s := range storage.LocationSecrets(a) {
			if len(s) >= minSecretLen {
				r.secrets = append(r.secrets, s)
			}
		}
	}
	return r
}

// text redacts one message.
func (r *redactor) text(s string) string {
	s = storage.RedactText(s)
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "REDACTED")
	}
	return s
}

// writer redacts every write to w (each message is written whole by one Fprintf).
func (r *redactor) writer(w io.Writer) io.Writer {
	return &redactingWriter{r: r, w: w}
}

type redactingWriter struct {
	r *redactor
	w io.Writer
}

func (rw *redactingWriter) Write(p []byte) (int, error) {
	s := rw.r.text(string(p))
	if _, err := io.WriteString(rw.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
