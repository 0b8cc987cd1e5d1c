//go:build !race

package datafile

// raceEnabled: see race_on_test.go.
const raceEnabled = false
