package dml

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/skipping"
)

// DeleteWhere records the deletion of the rows for which pred is TRUE (DELETE, and
// the rows a replaceWhere overwrite replaces): files the plan proves to match
// entirely (and whose add action counts their rows) are removed unread (D1), the
// others read, only the predicate's columns.
func (a *Attempt) DeleteWhere(ctx context.Context, pred expr.Expr) error {
	p, err := a.plan(ctx, pred, nil)
	if err != nil {
		return err
	}
	a.readPreds = append(a.readPreds, p.Predicate)
	var toRead []*scanexec.Task
	for _, task := range p.Tasks {
		if task.Verdict.Verdict == skipping.MustMatch {
			if _, ok := task.Add.NumRecords(); ok {
				a.touched.RemoveWhole(task.Add)
				continue
			}
		}
		toRead = append(toRead, task)
	}
	a.res.FilesRead = len(toRead)
	return a.forEachTask(ctx, "scan", toRead, func(ctx context.Context, task *scanexec.Task) error {
		return a.readTouched(ctx, p.Target, task, false, func(f *Touched, b LiveBatch) error {
			pos, _, err := p.Target.Matching(b)
			if err == nil {
				a.touched.Delete(f, pos)
				if a.changes != nil {
					a.changes.DeletedAt(f.Add.Key(), pos)
				}
			}
			return err
		})
	})
}

// UpdateWhere updates, as set says, the rows for which pred is TRUE (nil: every
// row): the updated rows go to the row sink (or back to their clustered file's
// place), their old positions are deleted. It returns the predicates commitInfo
// records: pred's text as written, or none when there is no predicate.
func (a *Attempt) UpdateWhere(ctx context.Context, set []expr.Assignment, pred expr.Expr) ([]string, error) {
	bound, err := expr.BindAssignments(set, a.view.Logical())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
	}
	rules, err := a.view.WriteRules()
	if err != nil {
		return nil, err
	}
	if err := tableview.CheckIdentityUpdate(rules, AssignedNames(set)); err != nil {
		return nil, err
	}
	a.updateRules, a.updateAssigned = rules, AssignedSet(set)
	p, err := a.plan(ctx, pred, fieldNames(a.view.Logical()))
	if err != nil {
		return nil, err
	}
	predicates := []string{}
	if p.Bound != nil {
		predicates = append(predicates, pred.String())
	}
	a.readPreds = append(a.readPreds, p.Predicate)
	a.res.FilesRead = len(p.Tasks)
	return predicates, a.forEachTask(ctx, "scan", p.Tasks, func(ctx context.Context, task *scanexec.Task) error {
		return a.updateMatching(ctx, p.Target, task, bound)
	})
}

// updateMatching reads one planned file, writes the updated versions of its matching
// live rows and records their positions for deletion.
func (a *Attempt) updateMatching(ctx context.Context, tg *Target, task *scanexec.Task, set *expr.BoundAssignments) error {
	var updated int64
	err := a.readTouched(ctx, tg, task, true, func(f *Touched, b LiveBatch) error {
		pos, sel, err := tg.Matching(b)
		if err != nil || len(pos) == 0 {
			return err
		}
		out, err := set.Apply(b.Rec, sel, a.mem)
		if err != nil {
			return fmt.Errorf("table: UPDATE of %s: %w", task.Add.Path, err)
		}
		defer out.Release()
		oldIdx := make([]int, 0, len(pos))
		if sel != nil {
			keep := make([]bool, len(b.Pos))
			for i := range keep {
				keep[i] = sel.Contains(i)
				if keep[i] {
					oldIdx = append(oldIdx, i)
				}
			}
			rows, err := FilterRows(ctx, out, keep, a.mem)
			if err != nil {
				return err
			}
			defer rows.Release()
			out = rows
		} else {
			for i := range b.Pos {
				oldIdx = append(oldIdx, i)
			}
		}
		regen, err := tableview.RecomputeGenerated(a.updateRules, out, a.updateAssigned, a.mem)
		if err != nil {
			return fmt.Errorf("table: UPDATE of %s: %w", task.Add.Path, err)
		}
		defer regen.Release()
		out = regen
		if err := a.writeUpdated(ctx, f, b.Rec, oldIdx, pos, out); err != nil {
			return err
		}
		if a.changes != nil {
			if err := a.recordUpdate(ctx, b.Rec, sel, out); err != nil {
				return err
			}
		}
		a.touched.Delete(f, pos)
		updated += int64(len(pos))
		return nil
	})
	a.mu.Lock()
	a.res.RowsUpdated += updated
	a.mu.Unlock()
	return err
}

// recordUpdate records in the change data files the rows of rec that sel selects
// (nil: all) as update preimages and post, their new values, as postimages.
func (a *Attempt) recordUpdate(ctx context.Context, rec arrow.RecordBatch, sel *expr.Selection, post arrow.RecordBatch) error {
	pre := rec
	if sel != nil {
		keep := make([]bool, rec.NumRows())
		for i := range keep {
			keep[i] = sel.Contains(i)
		}
		rows, err := FilterRows(ctx, rec, keep, a.mem)
		if err != nil {
			return err
		}
		defer rows.Release()
		pre = rows
	}
	return a.changes.Update(ctx, pre, post)
}

// fieldNames lists a schema's top-level field names.
func fieldNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// Merge runs a MERGE in the attempt: the clauses of spec (Keys, clauses and
// aliases; the rest is the attempt's: its schema, write rules, identity values,
// sinks) bound to the attempt's snapshot, then each pass of src's units: load it,
// plan the target files from its keys (every file without a key predicate), read
// them applying the matched and by-source clauses, insert the unmatched source
// rows. It returns the ON condition's text (commitInfo's predicate).
func (a *Attempt) Merge(ctx context.Context, spec MergeSpec, src *Source, passes [][]*Unit) (string, error) {
	spec.Logical = a.view.Logical()
	spec.Sink = a.sink
	spec.Mem = a.mem
	spec.Rules, spec.IDs = nil, nil
	if rules, err := a.view.WriteRules(); err == nil {
		a.ids = tableview.NewIdentityAssigner(rules)
		spec.Rules, spec.IDs = rules, a.ids
	}
	spec.Changes = a.changes
	m, err := NewMerger(spec, src)
	if err != nil {
		return "", err
	}
	a.res.SourceRows = src.Rows()
	a.res.Passes = len(passes)
	for _, units := range passes {
		if err := a.mergePass(ctx, m, units); err != nil {
			return "", err
		}
	}
	a.res.FilesRead = len(a.readPaths)
	a.merge = m.Counts()
	a.res.RowsInserted = a.merge.Inserted
	a.res.RowsUpdated = a.merge.MatchedUpdated + a.merge.BySourceUpdated
	a.res.RowsDeleted = a.merge.MatchedDeleted + a.merge.BySourceDeleted
	return m.OnText(), nil
}

// mergePass merges one group of source units: load them, plan the target files
// from their keys, read them applying the matched and by-source clauses, then
// insert the unmatched source rows.
func (a *Attempt) mergePass(ctx context.Context, m *Merger, units []*Unit) error {
	pass, err := m.LoadPass(ctx, units)
	if err != nil {
		return err
	}
	defer pass.Release()
	pred, err := m.KeyPredicate(pass)
	if err != nil {
		return err
	}
	p, err := a.plan(ctx, pred, m.ReadColumns())
	if err != nil {
		return err
	}
	if pred == nil {
		a.readAll = true
	} else {
		a.readPreds = append(a.readPreds, p.Predicate)
	}
	if err := a.forEachTask(ctx, "scan", p.Tasks, func(ctx context.Context, task *scanexec.Task) error {
		return a.readTouched(ctx, p.Target, task, true, func(f *Touched, b LiveBatch) error {
			return m.Batch(ctx, pass, touchedRows{a: a, f: f}, b)
		})
	}); err != nil {
		return err
	}
	return m.Insert(ctx, pass)
}

// touchedRows is a touched file of an attempt as a Merger changes its rows.
type touchedRows struct {
	a *Attempt
	f *Touched
}

func (r touchedRows) Updated(ctx context.Context, rec arrow.RecordBatch, old []int, pos []int64, out arrow.RecordBatch) error {
	return r.a.writeUpdated(ctx, r.f, rec, old, pos, out)
}
func (r touchedRows) Deleted(pos []int64) { r.a.touched.Delete(r.f, pos) }
func (r touchedRows) Key() string         { return r.f.Add.Key() }
func (r touchedRows) Path() string        { return r.f.Add.Path }
