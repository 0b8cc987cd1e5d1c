package tableview

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
)

// FileOptions are what a writer adds to the table's settings when it asks for the
// data-file writer settings (View.FileSpec). The zero value writes the table's data
// files with the table's settings and dataChange=false.
type FileOptions struct {
	// TargetFileSize overrides delta.targetFileSize (0: the table's).
	TargetFileSize int64
	// RowGroupLimit caps the row groups (0: none; they follow the target file size,
	// datafile.RowGroupTarget). A DML command under a memory budget sets it.
	RowGroupLimit int64
	// DataChange is the add actions' dataChange flag.
	DataChange bool
	// RowTracking carries the hidden row tracking columns (RowTrackingFields) after
	// the data columns, without statistics (a rewrite that keeps stable row IDs).
	RowTracking bool
	// BloomColumns are data columns (DataSchema spelling) that get Bloom filters in
	// addition to those skiplake.bloomFilter.columns names; BloomFPP overrides
	// skiplake.bloomFilter.fpp (0: the table's).
	BloomColumns []string
	BloomFPP     float64
	// Parallelism and Allocator are passed on to datafile.Spec (0 / nil: its defaults).
	Parallelism int
	Allocator   memory.Allocator
}

// FileSpec returns the data-file writer settings of the table: the one place they are
// assembled (every writer of data files — table writes, DML, OPTIMIZE,
// auto-compaction, the create-race rewrite — takes them from here). The batches
// written have DataSchema's fields (followed by RowTrackingFields with
// opts.RowTracking); the files get PhysicalDataSchema's names and field ids, the
// table's statistics columns (StatsConfig), its Bloom columns (BloomColumns plus
// opts.BloomColumns) and false-positive rate, its compression codec
// (delta.parquet.compression.codec, default zstd at datafile's default level), its
// target file size and row groups of datafile.RowGroupTarget of it. It fails when a
// property the files depend on holds an invalid value.
func (v *View) FileSpec(opts FileOptions) (datafile.Spec, error) {
	if err := v.props.Err(log.DataFileKeys...); err != nil {
		return datafile.Spec{}, v.errorf("%w", err)
	}
	codec, err := datafile.ParseCodec(v.props.ParquetCompressionCodec)
	if err != nil {
		return datafile.Spec{}, v.errorf("table property %s: %w", log.PropParquetCompressionCodec, err)
	}
	blooms, err := v.BloomColumns()
	if err != nil {
		return datafile.Spec{}, v.errorf("table property %s: %w", log.PropBloomFilterColumns, err)
	}
	for _, c := range opts.BloomColumns {
		if !containsFold(v.data.Fields(), c) {
			return datafile.Spec{}, v.errorf("%w: Bloom column %q is not a data column", ErrInvalidTable, c)
		}
		if !slices.ContainsFunc(blooms, func(b string) bool { return strings.EqualFold(b, c) }) {
			blooms = append(blooms[:len(blooms):len(blooms)], c)
		}
	}
	fpp := v.props.BloomFilterFPP
	if opts.BloomFPP != 0 {
		fpp = opts.BloomFPP
	}
	target := opts.TargetFileSize
	if target <= 0 {
		target = v.props.TargetFileSize
	}
	rg := datafile.RowGroupTarget(target)
	if opts.RowGroupLimit > 0 {
		rg = min(rg, opts.RowGroupLimit)
	}
	spec := datafile.Spec{
		Schema:         v.data,
		FileSchema:     v.physData,
		Codec:          codec,
		TargetFileSize: target,
		RowGroupBytes:  rg,
		Stats:          v.StatsConfig(),
		BloomColumns:   blooms,
		BloomFPP:       fpp,
		DataChange:     opts.DataChange,
		Parallelism:    opts.Parallelism,
		Allocator:      opts.Allocator,
	}
	if hidden := v.RowTrackingFields(); opts.RowTracking && hidden != nil {
		data := append(append([]arrow.Field(nil), v.data.Fields()...), hidden...)
		phys := append(append([]arrow.Field(nil), v.physData.Fields()...), hidden...)
		spec.Schema, spec.FileSchema = arrow.NewSchema(data, nil), arrow.NewSchema(phys, nil)
		spec.Stats = withoutTrailing(spec.Stats, v.physData)
	}
	return spec, nil
}

// withoutTrailing limits cfg so that no column after the fields of data (the hidden
// row tracking columns appended to it) gets statistics: an explicit column list
// names table columns only; a leaf count is capped at data's leaves.
func withoutTrailing(cfg stats.Config, data *arrow.Schema) stats.Config {
	if len(cfg.StatsColumns) > 0 {
		return cfg
	}
	leaves := 0
	var count func(t arrow.DataType)
	count = func(t arrow.DataType) {
		if st, ok := t.(*arrow.StructType); ok {
			for _, f := range st.Fields() {
				count(f.Type)
			}
			return
		}
		leaves++
	}
	for _, f := range data.Fields() {
		count(f.Type)
	}
	switch n := cfg.NumIndexedCols; {
	case n == stats.IndexNoColumns:
	case n == 0:
		cfg.NumIndexedCols = min(stats.DefaultNumIndexedCols, leaves)
	case n < 0:
		cfg.NumIndexedCols = leaves
	default:
		cfg.NumIndexedCols = min(n, leaves)
	}
	if cfg.NumIndexedCols == 0 {
		cfg.NumIndexedCols = stats.IndexNoColumns
	}
	return cfg
}

// containsFold reports whether a field of fields is named name (case-insensitively).
func containsFold(fields []arrow.Field, name string) bool {
	return slices.ContainsFunc(fields, func(f arrow.Field) bool { return strings.EqualFold(f.Name, name) })
}
