//go:build invariants || race

package invariants

// Enabled reports whether invariant checks run (this build: yes).
const Enabled = true
