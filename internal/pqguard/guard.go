package pqguard

import (
	"errors"
	"fmt"
)

// ErrDecoderPanic marks an error whose cause is a panic of arrow-go's Parquet decoder,
// contained by [Guard.Contain].
var ErrDecoderPanic = errors.New("the Parquet decoder failed")

// Guard turns a contained decoder panic into the caller's error type. The zero value
// returns the contained error as it is.
type Guard struct {
	// Wrap, when not nil, wraps every error Contain produces (datafile wraps it into
	// its *CorruptError).
	Wrap func(error) error
}

// Contain, deferred directly by a function that calls one arrow-go decoder entry
// point (`defer g.Contain(&err, "row group 3")`), recovers a panic raised inside that
// call into *err: "WHAT: the Parquet decoder failed: PANIC", wrapped by g.Wrap. It
// does nothing when there was no panic. It must be the deferred call itself (recover
// works only there), never called from another deferred function.
func (g Guard) Contain(err *error, what string) {
	if v := recover(); v != nil {
		e := fmt.Errorf("%s: %w: %v", what, ErrDecoderPanic, v)
		if g.Wrap != nil {
			e = g.Wrap(e)
		}
		*err = e
	}
}
