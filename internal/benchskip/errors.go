package benchskip

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of these (or a
// context error) and its message starts with "benchskip: ".
var (
	// ErrInvalidConfig reports a Config that Validate rejects; the message lists
	// every problem at once.
	ErrInvalidConfig = errors.New("benchskip: invalid config")
	// ErrUnknownWorkload reports a workload name ParseWorkload cannot read.
	ErrUnknownWorkload = errors.New("benchskip: unknown workload")
	// ErrUnknownChart reports a chart name WriteSVG does not draw, or a chart the
	// result cannot support (the boxes chart needs two clustering columns).
	ErrUnknownChart = errors.New("benchskip: unknown or unsupported chart")
	// ErrInternal reports a failure of a package this one builds on (ranks,
	// keys, statistics, predicate binding or skipping) while running a benchmark;
	// the message names the stage, layout or query.
	ErrInternal = errors.New("benchskip: internal failure")
)

// errorf wraps sentinel with a formatted message.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
