package main

// The CLI serves every table-location scheme: each backend registers itself with
// package storage when imported (library users import only those they need). The
// backends are imported in files of their own (backend_*.go) so that a CLI built
// for fewer schemes can leave one out with a build tag — skiplake_no_s3,
// skiplake_no_gcs, skiplake_no_azure — and with it that SDK's package initialisers,
// which Go runs at every start whether the scheme is used or not (the GCS SDK's are
// most of the CLI's start-up: BENCHMARKS.md, "Start-up"). A scheme left out is an
// unknown scheme (storage.ErrUnknownScheme), never a local directory.
