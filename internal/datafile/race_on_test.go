//go:build race

package datafile

// raceEnabled says the tests run under the race detector, which makes every memory
// access several times slower: the heaviest tests that check encoding or layout
// rather than concurrency run a representative part of their cases then (CI's plain
// go test runs them whole; its -race step checks the concurrency).
const raceEnabled = true
