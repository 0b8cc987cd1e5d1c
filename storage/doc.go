// Package storage is where a table's bytes live: a small interface (Storage) with a
// local-filesystem implementation (Local), an in-memory one for tests (Memory), and a
// conformance suite every implementation passes (package storagetest).
//
// Table locations are paths or URLs (ParseLocation, OpenURL, CreateURL). Object
// stores are backends in subpackages that register a URL scheme when imported, as
// database/sql drivers do, so a program compiles only the cloud SDKs it asks for:
// storage/s3 ("s3://bucket/prefix", S3 and S3-compatibles), storage/gcs ("gs://") and
// storage/azure ("azblob://"), all through gocloud.dev/blob. An unregistered scheme is
// an error (ErrUnknownScheme), never a local directory. Credentials come only from
// each provider's standard chain; URLs with user information are refused
// (ErrCredentialsInURL), and messages print locations only through RedactLocation /
// RedactURL: no user information, no value of a query parameter off the allow-list
// (see redact.go).
//
// Optional capabilities, each with a helper that falls back for stores without it:
// Creator (CreateObject: streamed writes; multipart uploads on object stores),
// BatchDeleter (DeleteMany: S3 DeleteObjects, parallel elsewhere), SizedOpener
// (OpenSized: no size request when the caller knows it), RequestCounter (Requests:
// GET/HEAD/LIST/PUT/DELETE counts and bytes; Counting adds it to any store),
// UploadAborter (AbortUploadsBefore: incomplete S3 multipart uploads of killed writers).
//
// Large objects can be written as a stream instead of one []byte: Creator is an optional
// capability (implemented by Local and Memory) whose ObjectWriter is published with
// put-if-absent semantics on Commit or discarded by Abort, and CreateObject uses it when
// a store has it and otherwise falls back to buffering in memory and PutIfAbsent.
//
// Invariants:
//   - L2 (storage half): PutIfAbsent is atomic. Exactly one of any number of concurrent
//     creators of a path wins; the others get ErrExist and the winner's bytes stay. On the
//     local filesystem this is a fully written, fsynced temporary file hard-linked to the
//     final name (link(2) fails if the name exists), never check-then-write.
//   - S1 (streamed create): an object written through an ObjectWriter is invisible to
//     Get, Open, Stat and List until Commit succeeds; Commit is put-if-absent exactly as
//     in L2 (on the local filesystem the same link(2) of a fsynced temporary file), and
//     Abort, a failed Write or a failed Commit leaves no object and no temporary file.
//   - Atomic replace: Put never exposes a partially written object; on the local
//     filesystem it renames a fsynced temporary file over the target and fsyncs the
//     directory, so the object is durable when Put returns.
//   - Confinement: every path is validated (ValidatePath, ValidatePrefix for List)
//     before use. Absolute paths, "." and "..", empty elements, backslashes, NUL bytes and
//     drive letters are rejected with ErrInvalidPath, so nothing is ever read or written
//     outside the root. Local additionally resolves every path through an os.Root, so
//     symbolic links cannot lead outside the root either.
//   - Objects, not directories: directories are never objects. Get, Open, Stat and Delete
//     of a directory report ErrNotExist and List does not return them.
//   - Cancellation: every method checks its context on entry and returns an error
//     wrapping ctx.Err() without touching the store.
//
// Paths are taken literally. Delta writes file paths into the log percent-encoded;
// decoding them is the caller's job (package log), and the decoded form is what this
// package validates and stores (see ValidatePath).
//
// Object stores (storage/internal/blobstore): PutIfAbsent and Create are the store's
// conditional create, probed once per store before the first use (a store that
// ignores the condition is refused unless the location says single_writer=true);
// Open reads an object's tail speculatively (a Parquet footer and page index in one
// request) and serves ReadAt by range requests; listings start after a key
// server-side where the store can; aborted or failed uploads leave no object and no
// multipart upload. Requests are retried by the SDKs (5 attempts on S3, or
// AWS_MAX_ATTEMPTS); on top of that a read whose response is cut short is sent again,
// a conditional create whose answer was lost recognises its own object (outside
// _delta_log/; the log judges commit files by their txnId), and a failure that may not
// recur wraps ErrTransient (storage/internal/blobstore/transient.go).
//
// Not here: Delta semantics (see package log), percent-decoding, caching beyond an
// open file's tail. Durability across a crash cannot be tested from one process; it
// rests on the fsync discipline above and on the object stores' own guarantees.
package storage
