// Package progress reports the progress of long CLI commands on stderr: a one-line
// bar redrawn in place on a terminal (Bar), and plain lines at most once per interval
// with rate and ETA for logs of scheduled jobs, where a redrawn bar would be noise
// (Lines). The CLI chooses between them; either may be turned off (--quiet).
//
// Bar and Lines are safe for concurrent use (library callbacks may fire from worker
// goroutines), and their nil values do nothing. Lines takes its clock from a field
// tests replace, so no test depends on wall-clock time.
package progress
