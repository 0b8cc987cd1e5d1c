package table

import "time"

// WithBudgetClock returns opts whose MaxDuration is measured by clock instead of
// the wall clock, so a test spends the budget at a chosen point without waiting.
func WithBudgetClock(opts MaintainOptions, clock func() time.Time) MaintainOptions {
	opts.budgetClock = clock
	return opts
}

// WithCopyRowGroupMin sets the average row-group rows and bytes below which
// Scan.CopyParquet refuses to copy (datafile.ExportOptions), so that tests of the
// copy need no tables of 32Ki-row row groups.
func WithCopyRowGroupMin(rows, bytes int64) ScanOption {
	return func(c *scanConfig) { c.copyMin = [2]int64{rows, bytes} }
}
