package advise

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/optimize"
)

// addLiquid adds a liquid-clustered table's own layout as a candidate: OPTIMIZE
// clusters such a table on a Hilbert curve over its clustering columns (one
// column: a plain sort of its ranks), and `optimize --full` re-clusters every
// file, so the candidate is that curve at the candidates' file count, applied by
// `skiplake optimize TABLE --full`. OPTIMIZE refuses any other curve there
// (refused holds those candidates); the best of them that a change of clustering
// columns would give (a Hilbert curve or a one-column sort) is named in a note
// with `alter --cluster-by`, which is how such a table changes layout.
func addLiquid(ctx context.Context, s *sim, clusterCols []string, refused []Candidate, opts Options, rep *Report) error {
	if len(clusterCols) == 0 {
		rep.Notes = append(rep.Notes, "the table is clustered without clustering columns: optimize only compacts it; set some with `skiplake alter TABLE --cluster-by c1,c2`")
		return nil
	}
	idx := make([]int, len(clusterCols))
	for i, c := range clusterCols {
		if idx[i] = fieldIndex(s.rec.Schema(), c); idx[i] < 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the clustering column %q is nested: the liquid layout is not modelled", c))
			return nil
		}
	}
	l, err := s.curveLayout(ctx, optimize.CurveHilbert, idx, rep.SimulatedFiles)
	if err != nil {
		return err
	}
	sc, err := s.score(l)
	if err != nil {
		return err
	}
	c := Candidate{Name: KindLiquid + "(" + strings.Join(clusterCols, ",") + ")", Kind: KindLiquid, Columns: clusterCols, Files: l.nfiles}
	if len(idx) >= 2 && len(rep.Columns) >= 2 {
		x, y := fieldIndex(s.rec.Schema(), rep.Columns[0]), fieldIndex(s.rec.Schema(), rep.Columns[1])
		if c.boxes, err = s.fileBoxes(l, x, y); err != nil {
			return err
		}
	}
	c.fill(sc)
	c.Command = command(c, opts)
	rep.Candidates = append(rep.Candidates, c)
	var alt *Candidate
	for i := range refused {
		r := &refused[i]
		if (r.Kind == KindHilbert || (r.Kind == KindLinear && len(r.Columns) == 1)) && (alt == nil || r.FilesReadPct < alt.FilesReadPct) {
			alt = r
		}
	}
	note := fmt.Sprintf("the table is liquid-clustered on %s: optimize clusters it on a Hilbert curve over those columns (%s); other clustering columns are set with `skiplake alter %s --cluster-by c1,c2`, then `%s`",
		strings.Join(clusterCols, ", "), c.Name, quoteArg(tableName(opts)), c.Command)
	if alt != nil && alt.FilesReadPct < c.FilesReadPct*0.98 {
		note += fmt.Sprintf("; clustering on %s instead would read %.2f%% of files, %s %.2f%%", strings.Join(alt.Columns, ","), alt.FilesReadPct, c.Name, c.FilesReadPct)
	}
	rep.Notes = append(rep.Notes, note)
	return nil
}
