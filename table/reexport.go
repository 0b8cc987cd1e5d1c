package table

import (
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/vacuum"
)

// The result types of Optimize and Vacuum are the engine packages' own, re-exported
// here as aliases so that users of the facade name them through package table alone.
// An alias is the same type (a *OptimizePlan is a *optimize.Plan), so nothing is
// copied or converted and the JSON forms the CLI prints stay the engine's. The
// options types, by contrast, are table's own: they take the user's terms (a Where
// predicate, ZOrderBy/HilbertBy/LinearBy) and leave out what only the engine needs
// (injected clocks, partition filter functions).

// OptimizePlan is the plan Optimize makes (optimize.Plan): the bins of files it
// rewrites, per partition, JSON-serialisable for dry runs.
type OptimizePlan = optimize.Plan

// OptimizeMetrics is what an executed Optimize did (optimize.Metrics): files removed
// and added, rows and bytes rewritten, commits.
type OptimizeMetrics = optimize.Metrics

// VacuumResult lists the files Vacuum deleted or, on a dry run, would delete
// (vacuum.Result).
type VacuumResult = vacuum.Result

// RetentionTooShortError is Vacuum's (and Maintain's VACUUM task's) refusal of a
// retention shorter than the table's delta.deletedFileRetentionDuration or than
// VacuumSafetyFloor without Force (vacuum.RetentionTooShortError). It matches
// ErrRetentionTooShort with errors.Is.
type RetentionTooShortError = vacuum.RetentionTooShortError

// ErrRetentionTooShort reports a Vacuum retention shorter than the table's retention
// period or than VacuumSafetyFloor without Force (vacuum.ErrRetentionTooShort).
var ErrRetentionTooShort = vacuum.ErrRetentionTooShort

// VacuumSafetyFloor is the shortest retention Vacuum and Maintain accept without
// Force, whatever delta.deletedFileRetentionDuration says: 7 days
// (vacuum.SafetyFloor).
const VacuumSafetyFloor = vacuum.SafetyFloor

// VacuumMinUnreferencedAge is the youngest an unreferenced file can be for Vacuum to
// delete it, even with Force: 1 hour, the longest a commit is assumed to take
// (vacuum.MinUnreferencedAge).
const VacuumMinUnreferencedAge = vacuum.MinUnreferencedAge
