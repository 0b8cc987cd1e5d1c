// Package progress draws a one-line progress bar on a terminal and stays silent
// otherwise (pipes, files, CI), as the CLI contract requires.
//
// A Bar is safe for concurrent use: library callbacks may fire from worker goroutines.
package progress
