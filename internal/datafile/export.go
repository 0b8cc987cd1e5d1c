package datafile

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Exporting by copy: a Parquet export of a whole table version (every row, every
// column, in table order) whose data files are ones this package's Writer wrote for
// the table is the files' row groups one after the other. Output.Export writes it
// as Stitch writes a data file (the same layout, D11's byte-for-byte copy and the
// same footer validation), but to a plain io.Writer, without an add action or index
// Bloom filters, and under the export's own Parquet schema: the footer's schema
// elements, column paths and key-value metadata (ARROW:schema) are those an empty
// export file written by this package's Writer from the export's Arrow schema has,
// so a reader sees exactly what it sees in the file the re-encoding export writes.
// That swap is allowed only when the two schemas differ in names and field ids
// alone (column mapping), never in a type, repetition or shape.

// ExportMinRowGroupRows and ExportMinRowGroupBytes are the defaults of Export's
// row-group size rule (ExportOptions): the row groups of an export must hold on average at least
// ExportMinRowGroupRows rows or ExportMinRowGroupBytes compressed bytes. A table of
// many small row groups (small appends not compacted yet) would make a file that
// reads slowly; Export refuses it (RuleRowGroupSize) and the caller re-encodes
// into proper row groups. A few small row groups among large ones (the tail of
// each file) do not make a poor file and are copied.
const (
	ExportMinRowGroupRows  = 32 << 10
	ExportMinRowGroupBytes = 1 << 20
)

// exportSmall is Export's row-group size rule, for groups row groups holding rows
// rows in bytes compressed bytes.
func exportSmall(opts ExportOptions, groups int, rows, bytes int64) bool {
	return rows < int64(groups)*opts.MinRowGroupRows && bytes < int64(groups)*opts.MinRowGroupBytes
}

// ExportOptions tunes Output.Export.
type ExportOptions struct {
	// Schema is the Arrow schema of the exported rows: the Output's Spec.Schema as a
	// reader of the table returns it (logical names). Required.
	Schema *arrow.Schema
	// MinRowGroupRows and MinRowGroupBytes are the row-group size rule: the
	// export's row groups must hold on average at least MinRowGroupRows rows or
	// MinRowGroupBytes compressed bytes; default ExportMinRowGroupRows and
	// ExportMinRowGroupBytes.
	MinRowGroupRows, MinRowGroupBytes int64
	// BufferBytes is the copy buffer; default 1 MiB.
	BufferBytes int64
	// Progress, if set, is called after the row groups of sources[i] are copied,
	// from the calling goroutine.
	Progress func(i int)
}

// ExportResult is what Output.Export wrote.
type ExportResult struct {
	// Rows and Bytes are the file's rows and size; RowGroups its row groups (the
	// sources', copied).
	Rows, Bytes int64
	RowGroups   int
}

// exportProbe is the footer an empty export file of one Arrow schema has.
type exportProbe struct {
	schema *arrow.Schema
	md     *metadata.FileMetaData
	err    error
}

// exportProbes caches the last probe of an Output (one export schema per Output in
// practice).
type exportProbes struct {
	mu   sync.Mutex
	last *exportProbe
}

// Export writes to w one Parquet file holding exactly the rows of sources, in
// order, by copying their row groups' column chunks byte for byte, with their Bloom
// filters, column indexes and offset indexes (offsets shifted), as Stitch does
// (invariant D11), under the Parquet schema and key-value metadata that this
// package's Writer gives a file of opts.Schema with default WriterOptions — the
// file a re-encoding export would write, but for its row groups, compression and
// Bloom filters, which are the sources'.
//
// The sources must meet Stitch's rules on writer, schema (the Output's), codec,
// page index, Bloom filters and layout, with two changes: there is no statistics
// rule (the log's numRecords, when given, must be the footer's rows, else the
// source is corrupt), and the row-group size rule is on the whole export: its row
// groups must hold on average at least ExportOptions.MinRowGroupRows rows or
// MinRowGroupBytes bytes (RuleRowGroupSize). opts.Schema must differ from the
// Output's FileSchema in names and Parquet field ids only (RuleSchema otherwise).
// Every source is checked before anything is written: a source that breaks a rule
// makes Export return a *NotStitchableError (errors.Is ErrNotStitchable) and a
// damaged one a *CorruptError, with nothing written to w; the caller then
// re-encodes. An error while copying (a failed read or write, ctx cancelled)
// leaves a partial file in w, which the caller discards. The footer is validated
// before it is written, as Stitch validates its own.
func (o *Output) Export(ctx context.Context, w io.Writer, sources []StitchSource, opts ExportOptions) (*ExportResult, error) {
	if len(sources) == 0 || w == nil || opts.Schema == nil {
		return nil, fmt.Errorf("%w: Export needs sources, a writer and a schema", ErrInvalidArgument)
	}
	if opts.BufferBytes < 0 || opts.MinRowGroupRows < 0 || opts.MinRowGroupBytes < 0 {
		return nil, fmt.Errorf("%w: negative ExportOptions.BufferBytes, MinRowGroupRows or MinRowGroupBytes", ErrInvalidArgument)
	}
	if opts.MinRowGroupRows == 0 {
		opts.MinRowGroupRows = ExportMinRowGroupRows
	}
	if opts.MinRowGroupBytes == 0 {
		opts.MinRowGroupBytes = ExportMinRowGroupBytes
	}
	if opts.BufferBytes == 0 {
		opts.BufferBytes = stitchCopyBuffer
	}
	pr := o.probe()
	if pr.err != nil {
		return nil, pr.err
	}
	ep := o.exportProbe(opts.Schema)
	if ep.err != nil {
		return nil, ep.err
	}
	if detail := sameShape(pr.md, ep.md); detail != "" {
		return nil, &NotStitchableError{Path: sources[0].Path, Rule: RuleSchema,
			Detail: "the export's Parquet schema differs from the table files' in more than names: " + detail}
	}
	// Refused without reading a footer: more files than row groups can be numbered,
	// or files so small (by the log's rows and sizes) that their row groups, at
	// least one a file, are small on average.
	const maxGroups = 1<<15 - 1
	if len(sources) > maxGroups {
		return nil, &NotStitchableError{Path: sources[0].Path, Rule: RuleLayout,
			Detail: fmt.Sprintf("%d files, more row groups than a Parquet ordinal numbers", len(sources))}
	}
	var logRows, logBytes int64
	known := true
	for _, src := range sources {
		if src.Stats == nil || src.Stats.NumRecords < 0 || src.Size <= 0 {
			known = false
			break
		}
		logRows += src.Stats.NumRecords
		logBytes += src.Size
	}
	if known && exportSmall(opts, len(sources), logRows, logBytes) {
		return nil, &NotStitchableError{Path: sources[0].Path, Rule: RuleRowGroupSize,
			Detail: fmt.Sprintf("%d files hold %d rows in %d bytes, on average fewer than %d rows and %d bytes",
				len(sources), logRows, logBytes, opts.MinRowGroupRows, opts.MinRowGroupBytes)}
	}
	sopts := StitchOptions{BufferBytes: opts.BufferBytes, Progress: opts.Progress}
	inputs := make([]*stitchInput, len(sources))
	groups := 0
	var rows, size int64
	for i, src := range sources {
		in, err := o.checkSource(ctx, src, pr, sopts, true)
		if err != nil {
			return nil, err
		}
		inputs[i] = in
		groups += len(in.chunks)
		if groups > maxGroups {
			return nil, &NotStitchableError{Path: src.Path, Rule: RuleLayout,
				Detail: fmt.Sprintf("more than %d row groups, more than a Parquet ordinal numbers", maxGroups)}
		}
		rows += in.md.NumRows
		for _, b := range in.rgBytes {
			size += b
		}
	}
	if exportSmall(opts, groups, rows, size) {
		return nil, &NotStitchableError{Path: sources[0].Path, Rule: RuleRowGroupSize,
			Detail: fmt.Sprintf("%d row groups hold %d rows in %d bytes, on average fewer than %d rows and %d bytes",
				groups, rows, size, opts.MinRowGroupRows, opts.MinRowGroupBytes)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	retarget := func(md *metadata.FileMetaData) {
		md.FileMetaData.Schema = ep.md.FileMetaData.Schema
		md.FileMetaData.KeyValueMetadata = ep.md.FileMetaData.KeyValueMetadata
		md.FileMetaData.ColumnOrders = ep.md.FileMetaData.ColumnOrders
		for _, rg := range md.FileMetaData.RowGroups {
			for c, cc := range rg.Columns {
				cc.MetaData.PathInSchema = ep.md.Schema.Column(c).ColumnPath()
			}
		}
	}
	size, rows, err := o.writeStitched(ctx, w, inputs, nil, sopts, retarget)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return &ExportResult{Rows: rows, Bytes: size, RowGroups: groups}, nil
}

// exportProbe writes an empty file of schema with default WriterOptions (what the
// re-encoding export writes) and reads its footer.
func (o *Output) exportProbe(schema *arrow.Schema) *exportProbe {
	o.exports.mu.Lock()
	defer o.exports.mu.Unlock()
	if p := o.exports.last; p != nil && p.schema.Equal(schema) && reflect.DeepEqual(p.schema.Metadata(), schema.Metadata()) {
		return p
	}
	p := &exportProbe{schema: schema}
	md, _, err := emptyFileFooter(schema, WriterOptions{})
	if err != nil {
		p.err = fmt.Errorf("datafile: export: probe file: %w", err)
	} else {
		p.md = md
	}
	o.exports.last = p
	return p
}

// sameShape returns "" when the files' footer (file) and the export's (export)
// have the same created_by and column orders and the same schema elements but for
// their names and field ids; else what differs.
func sameShape(file, export *metadata.FileMetaData) string {
	if file.GetCreatedBy() != export.GetCreatedBy() {
		return fmt.Sprintf("created by %q, not %q", export.GetCreatedBy(), file.GetCreatedBy())
	}
	if !reflect.DeepEqual(file.FileMetaData.ColumnOrders, export.FileMetaData.ColumnOrders) {
		return "column orders differ"
	}
	fs, es := file.FileMetaData.Schema, export.FileMetaData.Schema
	if len(fs) != len(es) {
		return fmt.Sprintf("%d schema elements, not %d", len(es), len(fs))
	}
	for i := range fs {
		if fs[i] == nil || es[i] == nil {
			return fmt.Sprintf("schema element %d missing", i)
		}
		f, e := *fs[i], *es[i]
		f.Name, e.Name = "", ""
		f.FieldID, e.FieldID = nil, nil
		if !reflect.DeepEqual(f, e) {
			return fmt.Sprintf("schema element %d (%q, file %q)", i, es[i].Name, fs[i].Name)
		}
	}
	return ""
}
