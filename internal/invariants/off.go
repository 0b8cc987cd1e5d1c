//go:build !(invariants || race)

package invariants

// Enabled reports whether invariant checks run (this build: no; build with -race or
// -tags invariants to turn them on).
const Enabled = false
