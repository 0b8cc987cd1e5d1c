package value

import (
	"testing"
	"time"
)

// TestCivilAgainstTime checks both directions against package time over dates far
// before and after the epoch, and the round trip.
func TestCivilAgainstTime(t *testing.T) {
	for days := int64(-800_000); days <= 800_000; days += 997 {
		tm := time.Unix(days*86400, 0).UTC()
		y, m, d := CivilFromDays(days)
		if y != int64(tm.Year()) || m != int64(tm.Month()) || d != int64(tm.Day()) {
			t.Fatalf("CivilFromDays(%d) = %d-%d-%d, want %s", days, y, m, d, tm.Format("2006-01-02"))
		}
		if got := DaysFromCivil(y, m, d); got != days {
			t.Fatalf("DaysFromCivil(%d, %d, %d) = %d, want %d", y, m, d, got, days)
		}
	}
}
