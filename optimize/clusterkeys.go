package optimize

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// ClusterKeys returns the sort key clustering gives each row of cols (the
// clustering columns, in order, as equal-length arrays): ranks from a sample of
// these rows (internal/rank, as a clustering bin draws them), stretched to the
// key width and combined by the curve. Sorting rows by key and cutting the order
// into files of equal size reproduces the layout OPTIMIZE writes for a bin
// holding exactly these rows; layout advice (package advise) simulates
// candidates with it. curve must not be CurveNone.
func ClusterKeys(curve Curve, cols []arrow.Array) ([]uint64, error) {
	if curve == CurveNone || curve > CurveHilbert {
		return nil, fmt.Errorf("%w: ClusterKeys needs a clustering curve, got %s", ErrInvalidOptions, curve)
	}
	if len(cols) == 0 || len(cols) > 8 {
		return nil, fmt.Errorf("%w: %d clustering columns (want 1..8)", ErrInvalidOptions, len(cols))
	}
	n := cols[0].Len()
	for _, c := range cols[1:] {
		if c.Len() != n {
			return nil, fmt.Errorf("%w: clustering columns of different lengths", ErrInvalidOptions)
		}
	}
	s := newSamplers(len(cols))
	if err := s.add(cols); err != nil {
		return nil, err
	}
	k, err := newKeyer(curve, s)
	if err != nil {
		return nil, err
	}
	keys := make([]uint64, n)
	if _, err := k.keys(cols, 0, keys, nil); err != nil {
		return nil, err
	}
	return keys, nil
}
