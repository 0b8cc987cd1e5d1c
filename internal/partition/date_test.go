package partition

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/value"
)

// Date partition values of every year round-trip, in Spark's spelling: before year 1
// with a "-", past 9999 with a "+" (time.Parse took neither, so a table partitioned
// by a date before year 1 could be written but not read back).
func TestDatePartitionValuesEveryYear(t *testing.T) {
	for _, c := range []struct {
		y, m, d int64
		text    string
	}{
		{1970, 1, 1, "1970-01-01"}, {1969, 12, 31, "1969-12-31"}, {1, 1, 1, "0001-01-01"},
		{0, 1, 1, "0000-01-01"}, {-1, 12, 31, "-0001-12-31"}, {-44, 3, 15, "-0044-03-15"},
		{9999, 12, 31, "9999-12-31"}, {10000, 1, 1, "+10000-01-01"}, {2024, 2, 29, "2024-02-29"},
	} {
		days := value.DaysFromCivil(c.y, c.m, c.d)
		s, isNull, err := Format(value.Date(days), "date")
		require.NoError(t, err)
		require.False(t, isNull)
		require.Equal(t, c.text, s)
		back, err := Parse(s, true, arrow.FixedWidthTypes.Date32)
		require.NoError(t, err)
		require.Equal(t, days, back.AsInt64(), s)
	}
	for _, bad := range []string{"2023-02-29", "2024-13-01", "24-01-01", "2024-1-01", "2024/01/01", "--2024-01-01", "x"} {
		_, err := Parse(bad, true, arrow.FixedWidthTypes.Date32)
		require.ErrorIs(t, err, ErrInvalidValue, bad)
	}
}
