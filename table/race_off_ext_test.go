//go:build !race

package table_test

// raceEnabled: see race_on_ext_test.go.
const raceEnabled = false
