package skipping

// Verdict is what a level's statistics prove about a unit (partition, file, row
// group, page) for a predicate. The names state the guarantee:
//
//   - CannotMatch: no row of the unit makes the predicate TRUE; the unit may be
//     skipped (invariant S1 says this is never claimed without proof).
//   - MightMatch: nothing is proven; read the unit and recheck the predicate.
//   - MustMatch: every row of the unit makes the predicate TRUE; the recheck may be
//     skipped and metadata-only answers are allowed (S2).
//
// The zero value is not a verdict; evaluators always fill every slot they are given.
// Verdicts are ordered CannotMatch < MightMatch < MustMatch, so the verdict of an
// AND is the minimum of its terms' verdicts and that of an OR the maximum.
type Verdict uint8

// The verdicts.
const (
	CannotMatch Verdict = iota + 1
	MightMatch
	MustMatch
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case CannotMatch:
		return "cannot-match"
	case MightMatch:
		return "might-match"
	case MustMatch:
		return "must-match"
	}
	return "invalid-verdict"
}

// And combines the verdicts of two conjuncts.
func (v Verdict) And(w Verdict) Verdict { return min(v, w) }

// Or combines the verdicts of two disjuncts.
func (v Verdict) Or(w Verdict) Verdict { return max(v, w) }

// Combine returns the verdict of a unit from two independent proofs about the same
// predicate (for example a partition-only and a stats-only evaluation): a proof of
// CannotMatch or MustMatch from either side holds. Contradictory proofs (one says
// cannot, the other must) can only come from inconsistent metadata; CannotMatch is
// then not trusted and MightMatch is returned.
func Combine(a, b Verdict) Verdict {
	switch {
	case a == b:
		return a
	case a == MightMatch:
		return b
	case b == MightMatch:
		return a
	}
	return MightMatch
}

// The units a LevelStats counts (its Unit field).
const (
	UnitFiles     = "files"
	UnitRowGroups = "row groups"
	UnitRows      = "rows"
)

// LevelStats counts what one skipping level (partition, file, bloom, row group,
// page) decided during a scan. It is plain data, JSON-friendly; the scan fills it.
type LevelStats struct {
	// Level names the level: "partition", "stats", "bloom", "rowgroup", "page".
	Level string `json:"level"`
	// Unit names what Total, Skipped, Kept and MustMatch count: UnitFiles,
	// UnitRowGroups or UnitRows (the page level counts the rows of the pages it
	// decides; it decides no bytes and proves no MustMatch).
	Unit string `json:"unit"`
	// Total is the number of units considered.
	Total int64 `json:"total"`
	// Skipped is the number of units proven CannotMatch.
	Skipped int64 `json:"skipped"`
	// Kept is the number of units read (MightMatch or MustMatch).
	Kept int64 `json:"kept"`
	// MustMatch is the number of kept units proven MustMatch.
	MustMatch int64 `json:"mustMatch"`
	// BytesTotal is the stored (compressed, on-disk) size of all units considered:
	// file sizes from the log, row groups' compressed column chunks. Zero for a
	// level that counts rows.
	BytesTotal int64 `json:"bytesTotal"`
	// BytesSkipped is the stored size of the skipped units.
	BytesSkipped int64 `json:"bytesSkipped"`
}

// Add records one unit of the given size and verdict.
func (s *LevelStats) Add(v Verdict, bytes int64) {
	s.Total++
	s.BytesTotal += bytes
	switch v {
	case CannotMatch:
		s.Skipped++
		s.BytesSkipped += bytes
	case MustMatch:
		s.Kept++
		s.MustMatch++
	default:
		s.Kept++
	}
}

// Merge adds the counts of o (same level) to s.
func (s *LevelStats) Merge(o LevelStats) {
	s.Total += o.Total
	s.Skipped += o.Skipped
	s.Kept += o.Kept
	s.MustMatch += o.MustMatch
	s.BytesTotal += o.BytesTotal
	s.BytesSkipped += o.BytesSkipped
}
