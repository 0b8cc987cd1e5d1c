// Package invariants switches on the checks that are too costly for production but
// cheap enough for tests: Enabled is true in builds with the race detector or the
// "invariants" build tag (go test -race, go test -tags invariants) and false
// otherwise, as a constant, so that code guarded by it compiles away in ordinary
// builds. A check guarded by Enabled must never change what the code does when it
// passes; when it fails it returns an error (never panics across an API).
package invariants
