// Package value holds typed scalar values shared by the predicate language (expr),
// statistics (stats), skipping and Bloom-filter probing, so that a literal and a
// statistic of the same Delta type are compared in one representation.
//
// Representation by Delta type (the invariant every producer keeps):
//
//	byte, short, integer, long  -> KindInt64 (widened)
//	float, double               -> KindFloat64 (widened)
//	decimal(p,s)                -> KindDecimal: unscaled 128-bit integer, precision, scale
//	string                      -> KindString (UTF-8, compared byte-wise = code-point order)
//	binary                      -> KindBinary
//	boolean                     -> KindBool
//	date                        -> KindDate: days since 1970-01-01
//	timestamp                   -> KindTimestamp: microseconds since the epoch, UTC
//	timestamp_ntz               -> KindTimestampNTZ: microseconds since the epoch, no zone
//
// Values are immutable and safe to share between goroutines.
package value
