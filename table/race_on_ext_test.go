//go:build race

package table_test

// raceEnabled says the tests run under the race detector (every memory access
// several times slower): the heaviest tests that check results or memory rather
// than concurrency shrink then (CI's plain go test runs them whole).
const raceEnabled = true
