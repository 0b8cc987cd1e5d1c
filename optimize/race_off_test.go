//go:build !race

package optimize

// raceEnabled: see race_on_test.go.
const raceEnabled = false
