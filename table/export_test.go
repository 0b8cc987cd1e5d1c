package table

import "time"

// WithBudgetClock returns opts whose MaxDuration is measured by clock instead of
// the wall clock, so a test spends the budget at a chosen point without waiting.
func WithBudgetClock(opts MaintainOptions, clock func() time.Time) MaintainOptions {
	opts.budgetClock = clock
	return opts
}
