package table

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/skiplake/skiplake/internal/health"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// LayoutColumn is the skipping health of one column (see LayoutReport).
type LayoutColumn = health.Column

// LayoutBucket is one bar of the file size histogram.
type LayoutBucket = health.Bucket

// WriteAmplification is how many bytes a table's history wrote per byte of data it
// took in (see LayoutReport).
type WriteAmplification = health.WriteAmplification

// LayoutOptions configures Layout. The zero value analyses the clustering columns
// with 1% range queries, counts files below three quarters of the target size as
// small, and reads the history for write amplification.
type LayoutOptions struct {
	// Columns are the columns to analyse (dotted names for nested columns). Default:
	// a clustered table's clustering columns, else the columns the most recently
	// clustered files were clustered by (their ZCUBE_ZORDER_BY tag), else none.
	Columns []string
	// RangeFraction is the fraction of rows the range queries select (default 0.01).
	RangeFraction float64
	// SmallFileSize is the size below which a file counts as small (default three
	// quarters of delta.targetFileSize: the files compaction would rewrite).
	SmallFileSize int64
	// SkipHistory leaves write amplification out (it reads every commit file still
	// in the log; everything else comes from the snapshot).
	SkipHistory bool
}

// LayoutReport describes how well a snapshot's files are laid out for data
// skipping, from the log alone: no data file is read. The per-column figures follow
// the range model of skipping (each file is the interval [min, max] of its values;
// see the health figures' definitions in LayoutColumn's fields, and the README
// section "Clustered tables and scheduled maintenance" on describe --layout).
type LayoutReport struct {
	// Version is the snapshot version.
	Version int64 `json:"version"`
	// TargetFileSize is the table's target file size in bytes.
	TargetFileSize int64 `json:"targetFileSize"`
	// ClusteringColumns are a clustered table's clustering columns (nil otherwise).
	ClusteringColumns []string `json:"clusteringColumns,omitempty"`
	// Files, Bytes, Partitions, Histogram, SmallFiles, ClusteredFraction, ...: the
	// file-level summary.
	health.Summary
	// Columns is the skipping health per analysed column, in order.
	Columns []LayoutColumn `json:"columns,omitempty"`
	// WriteAmplification is nil with SkipHistory.
	WriteAmplification *WriteAmplification `json:"writeAmplification,omitempty"`
	// DeletionVectors is the deletion-vector debt: rows deleted but not purged, in
	// total and per file, against skiplake.optimize.maxDeletedRowsRatio.
	DeletionVectors health.DeletionDebt `json:"deletionVectors"`
}

// Layout reports the layout health of the latest version (see Snapshot.Layout).
func (t *Table) Layout(ctx context.Context, opts LayoutOptions) (*LayoutReport, error) {
	snap, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, err
	}
	return snap.Layout(ctx, opts)
}

// Layout reports the snapshot's layout health from its log: file count and size
// histogram, small files, the share of bytes written clustered, per column the
// average overlap depth and the expected share of files a point or range query on it
// reads, and (unless opts.SkipHistory) the write amplification of the history still
// in the log. It reads no data file.
func (s *Snapshot) Layout(ctx context.Context, opts LayoutOptions) (*LayoutReport, error) {
	if opts.RangeFraction < 0 || opts.RangeFraction > 1 || opts.SmallFileSize < 0 {
		return nil, fmt.Errorf("%w: RangeFraction must lie in [0, 1] and SmallFileSize be non-negative", ErrInvalidArgument)
	}
	props := s.Properties()
	rep := &LayoutReport{Version: s.Version(), TargetFileSize: props.TargetFileSize}
	clustering, err := s.log.Clustering()
	if err != nil {
		return nil, err
	}
	if clustering != nil {
		rep.ClusteringColumns = clustering.Names()
	}
	cols := opts.Columns
	if len(cols) == 0 {
		cols = rep.ClusteringColumns
	}
	if len(cols) == 0 {
		cols = lastCubeColumns(s.log.Files())
	}
	small := opts.SmallFileSize
	if small == 0 {
		small = s.view.SmallFileSize()
	}
	current := ""
	if len(cols) > 0 {
		b, _ := json.Marshal(cols)
		current = string(b)
	}
	files := s.log.Files()
	hf := make([]health.File, len(files))
	for i, a := range files {
		clustered := a.ClusteringProvider != "" || a.Tags[optimize.TagCubeID] != ""
		hf[i] = health.File{Size: a.Size, Partition: s.view.PartitionKey(a), Clustered: clustered,
			ClusteredByCurrent: clustered && current != "" && sameColumnsJSON(a.Tags[optimize.TagCubeColumns], cols)}
	}
	rep.Summary = health.Summarize(hf, small)
	rep.DeletionVectors = deletionDebt(s.log)
	for _, c := range cols {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ranges, name, err := s.fileRanges(c)
		if err != nil {
			return nil, err
		}
		rep.Columns = append(rep.Columns, health.Analyze(name, ranges, opts.RangeFraction))
	}
	if !opts.SkipHistory {
		w, err := log.New(s.store).WriteVolume(ctx, s.Version())
		if err != nil {
			return nil, err
		}
		wa := health.NewWriteAmplification(w.FromVersion, w.ToVersion, w.DataBytes, w.RearrangedBytes)
		rep.WriteAmplification = &wa
	}
	return rep, nil
}

// deletionDebt sums the rows the live files' deletion vectors mark deleted.
func deletionDebt(snap *log.Snapshot) health.DeletionDebt {
	files := snap.Files()
	df := make([]health.DeletedFile, 0, len(files))
	for _, a := range files {
		n, ok := a.NumRecords()
		if !ok {
			continue
		}
		f := health.DeletedFile{Path: a.Path, Size: a.Size, Rows: n}
		if a.DeletionVector != nil {
			f.DeletedRows = a.DeletionVector.Cardinality
		}
		df = append(df, f)
	}
	return health.Deletions(df, snap.Properties().MaxDeletedRowsRatio)
}

// sameColumnsJSON reports whether a ZCUBE_ZORDER_BY tag names cols (case-insensitively).
func sameColumnsJSON(tag string, cols []string) bool {
	var got []string
	if tag == "" || json.Unmarshal([]byte(tag), &got) != nil || len(got) != len(cols) {
		return false
	}
	for i := range got {
		if !strings.EqualFold(got[i], cols[i]) {
			return false
		}
	}
	return true
}

// lastCubeColumns returns the clustering columns recorded by the most recently
// written clustered file, or nil.
func lastCubeColumns(files []*log.Add) []string {
	var best *log.Add
	for _, a := range files {
		if a.Tags[optimize.TagCubeColumns] != "" && (best == nil || a.ModificationTime > best.ModificationTime) {
			best = a
		}
	}
	if best == nil {
		return nil
	}
	var cols []string
	if json.Unmarshal([]byte(best.Tags[optimize.TagCubeColumns]), &cols) != nil {
		return nil
	}
	return cols
}

// fileRanges reads every live file's bounds for column c (a dotted name; a
// partition column's value is its bounds) from the log, with the file's live rows.
func (s *Snapshot) fileRanges(c string) ([]health.FileRange, string, error) {
	path, err := stats.ParseColumnPath(c)
	if err != nil {
		return nil, "", fmt.Errorf("%w: column %q: %v", ErrInvalidArgument, c, err)
	}
	logical, phys, ok := s.view.PhysicalPath(path)
	if !ok {
		return nil, "", fmt.Errorf("%w: %q (columns: %s)", ErrUnknownColumn, c, fieldNames(s.view.Logical()))
	}
	name := strings.Join(logical, ".")
	files := s.log.Files()
	out := make([]health.FileRange, len(files))
	part := len(logical) == 1 && s.view.IsPartition(logical[0])
	parser := s.view.StatsParser()
	for i, a := range files {
		fr := &out[i]
		n, known := a.NumRecords()
		if !known {
			n = 1
		}
		if a.DeletionVector != nil {
			n = max(n-a.DeletionVector.Cardinality, 0)
		}
		fr.Rows = n
		if part {
			pv, err := s.view.PartitionValues(a)
			if err != nil {
				return nil, "", err
			}
			v := pv[phys[0]]
			fr.AllNull = v.IsNull()
			fr.Min, fr.Max, fr.Bounded = v, v, !v.IsNull()
			continue
		}
		if a.Stats == "" {
			continue
		}
		f, err := parser.Parse(a.Stats)
		if err != nil {
			continue // unparseable statistics bound nothing (S1)
		}
		col := f.Column(phys...)
		if col == nil {
			continue
		}
		fr.AllNull = col.HasNullCount && f.NumRecords >= 0 && col.NullCount >= f.NumRecords
		fr.Bounded = !fr.AllNull && !col.Min.IsNull() && !col.Max.IsNull() && !isNaN(col.Min) && !isNaN(col.Max)
		fr.Min, fr.Max = col.Min, col.Max
	}
	return out, name, nil
}

func isNaN(v value.Value) bool { return v.Kind() == value.KindFloat64 && math.IsNaN(v.AsFloat64()) }
