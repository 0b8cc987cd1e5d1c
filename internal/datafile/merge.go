package datafile

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/skiplake/skiplake/storage"
)

// Page-level merging (StitchOptions.MergeRowGroups, invariant D12): the row groups
// of the sources smaller than MinRowGroupBytes are merged, consecutive ones
// together, into row groups of at most the Output's row-group size (Spec.
// RowGroupBytes, compressed bytes); the others are copied whole as Stitch copies
// them (D11). In a merged row group each column is either
//
//   - copied page by page: when no source chunk of it has a dictionary page (or a
//     dictionary encoding) and it is not a Bloom column, its data pages (v1 or
//     v2, PLAIN or any other non-dictionary encoding) are copied verbatim, one
//     source chunk after the other, into one new chunk, whose metadata is built
//     from the sources' (values and sizes summed, encodings and encoding
//     statistics united, statistics merged by the column's physical type and
//     sort order — arrow-go's own typed statistics, so signed and unsigned
//     integers, floats' NaN and -0 rules and unsigned lexicographic byte arrays
//     are ordered as the Writer orders them —, null counts summed, distinct
//     counts dropped, exactness flags kept only where every source has them;
//     size statistics and level histograms, which the Writer does not write, are
//     dropped), with a column index of the sources' page entries concatenated
//     (boundary order recomputed) and an offset index of their page locations
//     (offsets shifted, first rows shifted by the rows before); or
//   - re-encoded: a column with a dictionary in some source (dictionary fallback
//     chunks included) or a Bloom column (its chunk needs a new native filter) is
//     decoded from the sources and written, with the other re-encoded columns of
//     the row group, by this package's Writer with the Output's settings (codec
//     and level, page size, page index, Bloom filters; dictionary encoding when
//     some source chunk of the column had one) into an in-memory Parquet file of
//     one row group, whose column chunks (bytes, column index, offset index,
//     Bloom filter) are spliced into the output row group. A top-level field is
//     re-encoded whole (all its leaves) when one of its leaves must be. The
//     in-memory file's Parquet schema elements and column orders for those
//     fields must be the output's (checked).
//
// Layout of a merged file, every offset in the footer pointing at the bytes:
//
//	"PAR1"
//	row group 0: its column chunks, then the Bloom filters of its re-encoded (or, copied whole, its own) chunks
//	row group 1: …
//	column indexes of every chunk
//	offset indexes of every chunk
//	footer: FileMetaData (the Output's schema and key-value metadata, the new row groups)
//	footer length (4 bytes, little-endian), "PAR1"
//
// A merged row group's source bytes are read into memory (one read per source
// row group) and held while it is written: at most the row-group size, as the
// Writer holds the pages of the row group it encodes. A merged row group whose
// re-encoded columns came out larger than the sources' (so that the row group
// would exceed the target) is split in two and merged again.

// rgRef names one source row group: inputs[in], row group rg.
type rgRef struct{ in, rg int }

// planMerge groups the sources' row groups into the output's: a row group of at
// least minBytes alone (copied whole), runs of smaller consecutive ones together
// while their compressed bytes stay within target. merging reports whether some
// group has several row groups.
func planMerge(inputs []*stitchInput, minBytes, target int64) (groups [][]rgRef, merging bool) {
	var cur []rgRef
	var curBytes int64
	flush := func() {
		if len(cur) > 0 {
			merging = merging || len(cur) > 1
			groups = append(groups, cur)
			cur, curBytes = nil, 0
		}
	}
	for i, in := range inputs {
		for rg, b := range in.rgBytes {
			if b >= minBytes {
				flush()
				groups = append(groups, []rgRef{{i, rg}})
				continue
			}
			if len(cur) > 0 && curBytes+b > target {
				flush()
			}
			cur = append(cur, rgRef{i, rg})
			curBytes += b
		}
	}
	flush()
	return groups, merging
}

// outChunk is the page index of one output column chunk, written after the row
// groups: its column index (serialized) and its pages, at their output offsets.
type outChunk struct {
	columnIndex []byte
	pages       []metadata.PageLocation
}

// topField is one top-level field of the file schema and its leaves [lo, hi).
type topField struct {
	lo, hi int
	bloom  int // index in Output.bloom, -1 if not a Bloom column
}

// merger writes one merged file.
type merger struct {
	o      *Output
	ctx    context.Context
	cw     *countingWriter
	buf    []byte
	inputs []*stitchInput
	out    *metadata.FileMetaData // the output footer, its row groups appended as written
	index  [][]outChunk           // per output row group, per leaf
	sum    *Summary
	fields []topField
	res    *StitchResult
}

// topFields maps the Output's top-level fields to their Parquet leaves.
func (o *Output) topFields(md *metadata.FileMetaData) ([]topField, error) {
	root := md.Schema.Root()
	if root.NumFields() != o.file.NumFields() {
		return nil, fmt.Errorf("datafile: stitching: internal error: %d Parquet fields for %d Arrow fields", root.NumFields(), o.file.NumFields())
	}
	out := make([]topField, root.NumFields())
	at := 0
	for i := range out {
		n := leafCount(root.Field(i))
		out[i] = topField{lo: at, hi: at + n, bloom: -1}
		at += n
	}
	if at != md.Schema.NumColumns() {
		return nil, fmt.Errorf("datafile: stitching: internal error: %d leaves counted, %d in the schema", at, md.Schema.NumColumns())
	}
	for b, bc := range o.bloom {
		out[bc.idx].bloom = b
	}
	return out, nil
}

func leafCount(n schema.Node) int {
	g, ok := n.(*schema.GroupNode)
	if !ok {
		return 1
	}
	total := 0
	for i := range g.NumFields() {
		total += leafCount(g.Field(i))
	}
	return total
}

// writeMerged writes the merged file of groups (planMerge) to w and returns its
// size and rows.
func (o *Output) writeMerged(ctx context.Context, w io.Writer, inputs []*stitchInput, groups [][]rgRef, sum *Summary, pr *stitchProbe, opts StitchOptions, res *StitchResult) (size, rows int64, err error) {
	out, err := parseFooter(pr.footer) // a private copy of the Output's footer, without row groups
	if err != nil {
		return 0, 0, fmt.Errorf("datafile: stitching: probe footer: %w", err)
	}
	fields, err := o.topFields(out)
	if err != nil {
		return 0, 0, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	m := &merger{o: o, ctx: ctx, cw: &countingWriter{w: bw}, buf: make([]byte, opts.BufferBytes), inputs: inputs,
		out: out, sum: sum, fields: fields, res: res}
	if _, err := m.cw.Write([]byte("PAR1")); err != nil {
		return 0, 0, fmt.Errorf("datafile: stitching: %w", err)
	}
	next := 0 // the next input whose progress is reported (once its last row group is written)
	queue := slices.Clone(groups)
	for len(queue) > 0 {
		grp := queue[0]
		queue = queue[1:]
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		if len(grp) == 1 {
			if err := m.copyWhole(grp[0]); err != nil {
				return 0, 0, err
			}
		} else {
			pg, err := m.prepare(grp)
			if err != nil {
				return 0, 0, err
			}
			if pg.bytes > o.spec.RowGroupBytes {
				// The re-encoded columns outgrew the sources': merge each half alone.
				half := len(grp) / 2
				queue = append([][]rgRef{grp[:half], grp[half:]}, queue...)
				continue
			}
			if err := m.writeGroup(pg); err != nil {
				return 0, 0, err
			}
		}
		rows += m.out.RowGroups[len(m.out.RowGroups)-1].NumRows
		last := grp[len(grp)-1]
		done := last.in
		if last.rg != len(inputs[last.in].chunks)-1 {
			done--
		}
		for ; next <= done; next++ {
			if opts.Progress != nil {
				opts.Progress(next)
			}
		}
	}
	if n := len(m.out.RowGroups); n > 1<<15-1 {
		return 0, 0, &NotStitchableError{Path: inputs[0].src.Path, Rule: RuleLayout,
			Detail: fmt.Sprintf("%d row groups after merging, more than a Parquet ordinal numbers", n)}
	}
	if err := m.writeIndexes(); err != nil {
		return 0, 0, err
	}
	footer, err := footerBytes(m.out, rows, m.cw.n)
	if err != nil {
		return 0, 0, err
	}
	if err := writeFooter(m.cw, bw, footer); err != nil {
		return 0, 0, err
	}
	res.RowGroups = len(m.out.RowGroups)
	return m.cw.n, rows, nil
}

// copyWhole copies one source row group whole (D11's copy, its Bloom filters
// right after it).
func (m *merger) copyWhole(ref rgRef) error {
	in := m.inputs[ref.in]
	return m.o.withSource(m.ctx, in, func(f storage.File) error {
		cp := &rangeCopier{w: m.cw, f: f, buf: m.buf}
		src := in.md.RowGroups[ref.rg]
		nrg := *src
		nrg.Columns = slices.Clone(src.Columns)
		chunks := in.chunks[ref.rg]
		index := make([]outChunk, len(chunks))
		first := cp.pos()
		for c, ch := range chunks {
			if err := m.ctx.Err(); err != nil {
				return err
			}
			shift := cp.pos() - ch.start
			if err := cp.add(ch.start, ch.length); err != nil {
				return fmt.Errorf("datafile: stitching %s row group %d column %d: %w", in.src.Path, ref.rg, c, err)
			}
			cc := *nrg.Columns[c]
			cm := *cc.MetaData
			cc.MetaData = &cm
			cm.DataPageOffset += shift
			if cm.DictionaryPageOffset != nil {
				d := *cm.DictionaryPageOffset + shift
				cm.DictionaryPageOffset = &d
			}
			if cc.FileOffset != 0 {
				cc.FileOffset += shift
			}
			nrg.Columns[c] = &cc
			pages := make([]metadata.PageLocation, len(ch.offsetIndex))
			for i, p := range ch.offsetIndex {
				pages[i] = metadata.PageLocation{Offset: p.Offset + shift, CompressedPageSize: p.CompressedPageSize, FirstRowIndex: p.FirstRowIndex}
			}
			index[c] = outChunk{columnIndex: ch.columnIndex, pages: pages}
		}
		for c, cc := range nrg.Columns {
			cm := cc.MetaData
			if cm.BloomFilterOffset == nil || *cm.BloomFilterOffset <= 0 {
				continue
			}
			at := cp.pos()
			if err := cp.add(*cm.BloomFilterOffset, int64(*cm.BloomFilterLength)); err != nil {
				return fmt.Errorf("datafile: stitching %s row group %d column %d Bloom filter: %w", in.src.Path, ref.rg, c, err)
			}
			cm.BloomFilterOffset = &at
		}
		if err := cp.flush(); err != nil {
			return fmt.Errorf("datafile: stitching %s: %w", in.src.Path, err)
		}
		ord := int16(len(m.out.RowGroups))
		nrg.FileOffset, nrg.Ordinal = &first, &ord
		m.out.RowGroups = append(m.out.RowGroups, &nrg)
		m.index = append(m.index, index)
		m.res.CopiedChunks += len(chunks)
		return m.o.addBloomColumns(m.ctx, f, in, []int{ref.rg}, m.sum)
	})
}

// member is one source row group of a merged group, its chunks' bytes in memory.
type member struct {
	ref   rgRef
	rows  int64
	bytes *spanSet
}

// subChunk is a column chunk of the in-memory file of re-encoded columns.
type subChunk struct {
	start, length int64
	columnIndex   []byte
	pages         []metadata.PageLocation // offsets in the in-memory file
	bloom         []byte
}

// preparedGroup is a merged row group ready to be written: the sources' bytes,
// which leaves are copied (with their merged column indexes) and the in-memory
// file of the re-encoded ones.
type preparedGroup struct {
	members  []member
	rows     int64
	copied   []bool   // per leaf
	colIndex [][]byte // per copied leaf: the merged column index
	sub      []byte   // the in-memory file of the re-encoded fields
	subMD    *metadata.FileMetaData
	subLeaf  []int // per leaf: its leaf in sub, -1 when copied
	subChunk []subChunk
	bytes    int64 // compressed bytes of the row group's chunks
}

// prepare reads a merged group's sources, decides which columns are copied and
// re-encodes the others.
func (m *merger) prepare(grp []rgRef) (*preparedGroup, error) {
	ncols := len(m.inputs[grp[0].in].chunks[grp[0].rg])
	pg := &preparedGroup{copied: make([]bool, ncols), colIndex: make([][]byte, ncols), subLeaf: make([]int, ncols)}
	reencode := make([]bool, len(m.fields))
	for k, fl := range m.fields {
		if fl.bloom >= 0 {
			reencode[k] = true // its chunk needs a new native Bloom filter
			continue
		}
		for c := fl.lo; c < fl.hi && !reencode[k]; c++ {
			ci, ok, err := m.mergeableColumn(grp, c)
			if err != nil {
				return nil, err
			}
			reencode[k] = !ok
			pg.colIndex[c] = ci
		}
		for c := fl.lo; c < fl.hi; c++ {
			pg.copied[c] = !reencode[k]
		}
	}
	var subFields []arrow.Field
	var subBloom []int // per field of the sub schema: index in Output.bloom or -1
	dict := map[string]bool{}
	for k, fl := range m.fields {
		if !reencode[k] {
			continue
		}
		f := m.o.file.Field(k)
		subFields = append(subFields, f)
		subBloom = append(subBloom, fl.bloom)
		on := false
		for _, r := range grp {
			for c := fl.lo; c < fl.hi; c++ {
				on = on || m.inputs[r.in].md.RowGroups[r.rg].Columns[c].MetaData.DictionaryPageOffset != nil
			}
		}
		dict[f.Name] = on
	}
	var sw *Writer
	var subBuf bytes.Buffer
	var subSchema *arrow.Schema
	if len(subFields) > 0 {
		subSchema = arrow.NewSchema(subFields, nil)
		wo := m.o.opts
		wo.TargetRowGroupBytes = math.MaxInt64 / 4 // one row group
		wo.DictionaryColumns = dict
		wo.sizes = nil
		wo.BloomColumns = nil
		for _, f := range subFields {
			if ndv, ok := m.o.opts.BloomColumns[f.Name]; ok {
				if wo.BloomColumns == nil {
					wo.BloomColumns = map[string]int64{}
				}
				wo.BloomColumns[f.Name] = ndv
			}
		}
		var err error
		if sw, err = NewWriter(&subBuf, subSchema, wo); err != nil {
			return nil, fmt.Errorf("datafile: stitching: re-encoding columns: %w", err)
		}
	}
	ok := false
	defer func() {
		if !ok && sw != nil {
			sw.Abort()
		}
	}()
	// Read the sources (one after the other, each opened once) and feed the
	// re-encoded columns to sw.
	for i := 0; i < len(grp); {
		j := i
		for j < len(grp) && grp[j].in == grp[i].in {
			j++
		}
		if err := m.readMembers(pg, grp[i:j], sw, subSchema, subBloom); err != nil {
			return nil, err
		}
		i = j
	}
	for c := range ncols {
		if pg.copied[c] {
			pg.subLeaf[c] = -1
			for _, mb := range pg.members {
				pg.bytes += m.inputs[mb.ref.in].chunks[mb.ref.rg][c].length
			}
		}
	}
	if sw != nil {
		res, err := sw.Close()
		ok = true
		if err != nil {
			return nil, fmt.Errorf("datafile: stitching: re-encoding columns: %w", err)
		}
		if res.NumRows != pg.rows || res.RowGroups != 1 {
			return nil, fmt.Errorf("datafile: stitching: internal error: re-encoded %d rows in %d row groups, want %d in one", res.NumRows, res.RowGroups, pg.rows)
		}
		if err := m.loadSub(pg, subBuf.Bytes(), reencode); err != nil {
			return nil, err
		}
	}
	ok = true
	return pg, nil
}

// mergeableColumn reports whether leaf c of the group's row groups can be copied
// page by page (no dictionary in any source chunk, a column index that merges)
// and returns the merged column index.
func (m *merger) mergeableColumn(grp []rgRef, c int) (ci []byte, ok bool, err error) {
	for _, r := range grp {
		cc, err := m.inputs[r.in].md.RowGroup(r.rg).ColumnChunk(c)
		if err != nil {
			return nil, false, named(corruptf("row group %d column %d: %w", r.rg, c, err), m.inputs[r.in].src.Path)
		}
		if cc.HasDictionaryPage() {
			return nil, false, nil
		}
		for _, e := range cc.Encodings() {
			if e == parquet.Encodings.PlainDict || e == parquet.Encodings.RLEDict {
				return nil, false, nil
			}
		}
	}
	return m.mergeColumnIndex(grp, c)
}

// mergeColumnIndex concatenates the column indexes of leaf c of the group's row
// groups: every page's entry (null page, min, max, null count) in order, the
// boundary order recomputed by arrow-go's builder. ok is false when the result
// would not be a complete column index (the chunk is then re-encoded).
func (m *merger) mergeColumnIndex(grp []rgRef, c int) (ci []byte, ok bool, err error) {
	descr := m.out.Schema.Column(c)
	b := metadata.NewColumnIndexBuilder(descr)
	if b == nil {
		return nil, false, nil
	}
	for _, r := range grp {
		in := m.inputs[r.in]
		ch := in.chunks[r.rg][c]
		where := fmt.Sprintf("row group %d column %q", r.rg, descr.Path())
		idx, err := decodeColumnIndex(descr, ch.columnIndex, where)
		if err != nil {
			return nil, false, named(err, in.src.Path)
		}
		nulls, mins, maxs := idx.GetNullPages(), idx.GetMinValues(), idx.GetMaxValues()
		var counts []int64
		if idx.IsSetNullCounts() {
			counts = idx.GetNullCounts()
		}
		if len(nulls) != len(ch.offsetIndex) || len(mins) != len(nulls) || len(maxs) != len(nulls) || (counts != nil && len(counts) != len(nulls)) {
			return nil, false, named(corruptf("%s: column index of %d pages, offset index of %d", where, len(nulls), len(ch.offsetIndex)), in.src.Path)
		}
		for p := range nulls {
			st := &metadata.EncodedStatistics{}
			if counts != nil {
				st.SetNullCount(counts[p])
			}
			if nulls[p] {
				st.AllNullValue = true
			} else {
				st.SetMin(mins[p]).SetMax(maxs[p])
			}
			if err := b.AddPage(st); err != nil {
				return nil, false, fmt.Errorf("datafile: stitching: column index: %w", err)
			}
		}
	}
	var buf bytes.Buffer
	if err := finishColumnIndex(b, &buf); err != nil {
		return nil, false, named(err, m.inputs[grp[0].in].src.Path)
	}
	if buf.Len() == 0 {
		return nil, false, nil // discarded: a page without min and max
	}
	return buf.Bytes(), true, nil
}

// decodeColumnIndex decodes a serialized column index (contained, D10).
func decodeColumnIndex(descr *schema.Column, raw []byte, where string) (ci metadata.ColumnIndex, err error) {
	defer guard.Contain(&err, where+": column index")
	ci = metadata.NewColumnIndex(descr, raw, nil, nil)
	if ci == nil {
		return nil, corruptf("%s: column index does not decode", where)
	}
	return ci, nil
}

// finishColumnIndex finishes b (which decodes every min and max: contained) and
// serializes it to w (nothing when it was discarded).
func finishColumnIndex(b metadata.ColumnIndexBuilder, w io.Writer) (err error) {
	defer guard.Contain(&err, "merged column index")
	if err := b.Finish(); err != nil {
		return corruptf("merged column index: %w", err)
	}
	_, err = b.WriteTo(w, nil)
	return err
}

// readMembers reads the row groups grp (all of one source) into memory, appends
// them to pg.members and writes their re-encoded fields (subSchema) to sw, feeding
// the index Bloom filters.
func (m *merger) readMembers(pg *preparedGroup, grp []rgRef, sw *Writer, subSchema *arrow.Schema, subBloom []int) error {
	in := m.inputs[grp[0].in]
	return m.o.withSource(m.ctx, in, func(f storage.File) error {
		spans := &spanSet{f: f}
		rgs := make([]int, len(grp))
		for i, r := range grp {
			if err := m.ctx.Err(); err != nil {
				return err
			}
			rgs[i] = r.rg
			if err := spans.load(in.chunks[r.rg]); err != nil {
				return named(fmt.Errorf("row group %d: %w", r.rg, err), in.src.Path)
			}
			rows := in.md.RowGroups[r.rg].NumRows
			pg.members = append(pg.members, member{ref: r, rows: rows, bytes: spans})
			pg.rows += rows
		}
		defer func() { spans.f = nil }() // f is closed after this; the spans stay
		if sw == nil {
			return nil
		}
		r, err := Open(spans, f.Size(), ReadOptions{Name: in.src.Path, Allocator: m.o.spec.Allocator})
		if err != nil {
			return err
		}
		defer r.Close()
		return r.Read(m.ctx, subSchema, rgs, func(rec arrow.RecordBatch, _ int64) error {
			for i, b := range subBloom {
				if b >= 0 {
					if err := m.sum.builders[b].AddArray(rec.Column(i)); err != nil {
						return fmt.Errorf("datafile: Bloom filter on %q: %w", m.o.bloom[b].phys, err)
					}
				}
			}
			return sw.Write(rec)
		})
	})
}

// loadSub parses the in-memory file of the re-encoded fields, checks that its
// schema elements are the output's for those fields, and reads its chunks' page
// indexes and Bloom filters.
func (m *merger) loadSub(pg *preparedGroup, sub []byte, reencode []bool) error {
	r, err := Open(bytes.NewReader(sub), int64(len(sub)), ReadOptions{Name: "re-encoded columns"})
	if err != nil {
		return fmt.Errorf("datafile: stitching: internal error: %w", err)
	}
	smd := r.Metadata()
	_ = r.Close()
	// Schema elements: the sub file's top-level fields are the re-encoded ones, in
	// order; each one's subtree must equal the output's.
	outAt, subAt := 1, 1
	subLeaves := 0
	for k, fl := range m.fields {
		outEnd := subtreeEnd(m.out, outAt)
		if reencode[k] {
			subEnd := subtreeEnd(smd, subAt)
			n := fl.hi - fl.lo
			if !reflect.DeepEqual(smd.FileMetaData.Schema[subAt:subEnd], m.out.FileMetaData.Schema[outAt:outEnd]) ||
				!reflect.DeepEqual(smd.FileMetaData.ColumnOrders[subLeaves:subLeaves+n], m.out.FileMetaData.ColumnOrders[fl.lo:fl.hi]) {
				return &NotStitchableError{Path: m.inputs[pg.members[0].ref.in].src.Path, Rule: RuleSchema,
					Detail: fmt.Sprintf("re-encoded column %q is written with other Parquet schema elements than the output's", m.o.file.Field(k).Name)}
			}
			for c := fl.lo; c < fl.hi; c++ {
				pg.subLeaf[c] = subLeaves + c - fl.lo
			}
			subLeaves += n
			subAt = subEnd
		}
		outAt = outEnd
	}
	if subLeaves != smd.Schema.NumColumns() {
		return fmt.Errorf("datafile: stitching: internal error: %d re-encoded leaves, %d in the in-memory file", subLeaves, smd.Schema.NumColumns())
	}
	pg.sub, pg.subMD = sub, smd
	pg.subChunk = make([]subChunk, subLeaves)
	ra := bytes.NewReader(sub)
	for c := range subLeaves {
		cc, err := smd.RowGroup(0).ColumnChunk(c)
		if err != nil {
			return fmt.Errorf("datafile: stitching: internal error: re-encoded column %d: %w", c, err)
		}
		where := fmt.Sprintf("re-encoded column %q", smd.Schema.Column(c).Path())
		start := cc.DataPageOffset()
		if cc.HasDictionaryPage() {
			start = cc.DictionaryPageOffset()
		}
		sc := subChunk{start: start, length: cc.TotalCompressedSize()}
		ciLoc, oiLoc := cc.GetColumnIndexLocation(), cc.GetOffsetIndexLocation()
		if ciLoc == nil || oiLoc == nil {
			return fmt.Errorf("datafile: stitching: internal error: %s has no page index", where)
		}
		if sc.columnIndex, err = readIndex(ra, ciLoc, where+": column index"); err == nil {
			sc.pages, err = readOffsetIndex(ra, oiLoc, cc.DataPageOffset(), start+sc.length, pg.rows, where)
		}
		if err != nil {
			return fmt.Errorf("datafile: stitching: internal error: %w", err)
		}
		if off, n := cc.BloomFilterOffset(), cc.BloomFilterLength(); off > 0 {
			if n <= 0 || off+int64(n) > int64(len(sub)) {
				return fmt.Errorf("datafile: stitching: internal error: %s: Bloom filter of %d bytes at %d", where, n, off)
			}
			sc.bloom = sub[off : off+int64(n)]
		}
		pg.subChunk[c] = sc
		pg.bytes += sc.length
	}
	return nil
}

// subtreeEnd returns the index after the schema element at i and its
// descendants (the schema is a depth-first list).
func subtreeEnd(md *metadata.FileMetaData, i int) int {
	elems := md.FileMetaData.Schema
	if i >= len(elems) {
		return len(elems)
	}
	j := i + 1
	for range elems[i].GetNumChildren() {
		j = subtreeEnd(md, j)
	}
	return j
}

// writeGroup writes a prepared merged row group: its chunks in schema order
// (copied pages or the in-memory file's chunk), then the Bloom filters of its
// re-encoded chunks; the footer entry and page index are kept for the end.
func (m *merger) writeGroup(pg *preparedGroup) error {
	first := pg.members[0].ref
	fin := m.inputs[first.in]
	nrg := *fin.md.RowGroups[first.rg]
	nrg.Columns = slices.Clone(nrg.Columns)
	ncols := len(nrg.Columns)
	index := make([]outChunk, ncols)
	groupStart := m.cw.n
	var totalC, totalU int64
	for c := range ncols {
		if err := m.ctx.Err(); err != nil {
			return err
		}
		if !pg.copied[c] {
			sc := pg.subMD.RowGroups[0].Columns[pg.subLeaf[c]]
			ch := pg.subChunk[pg.subLeaf[c]]
			at := m.cw.n
			if _, err := m.cw.Write(pg.sub[ch.start : ch.start+ch.length]); err != nil {
				return fmt.Errorf("datafile: stitching: %w", err)
			}
			shift := at - ch.start
			cm := sc.MetaData
			cm.DataPageOffset += shift
			if cm.DictionaryPageOffset != nil {
				d := *cm.DictionaryPageOffset + shift
				cm.DictionaryPageOffset = &d
			}
			if sc.FileOffset != 0 {
				sc.FileOffset += shift
			}
			pages := make([]metadata.PageLocation, len(ch.pages))
			for i, p := range ch.pages {
				pages[i] = metadata.PageLocation{Offset: p.Offset + shift, CompressedPageSize: p.CompressedPageSize, FirstRowIndex: p.FirstRowIndex}
			}
			index[c] = outChunk{columnIndex: ch.columnIndex, pages: pages}
			nrg.Columns[c] = sc
			totalC += cm.TotalCompressedSize
			totalU += cm.TotalUncompressedSize
			m.res.ReencodedChunks++
			continue
		}
		src := fin.md.RowGroups[first.rg].Columns[c]
		cc := *src
		cm := *src.MetaData
		cc.MetaData = &cm
		start := m.cw.n
		var pages []metadata.PageLocation
		var rowsBefore, values, compressed, uncompressed int64
		encodings := cm.Encodings[:0:0]
		encStats := cm.EncodingStats[:0:0]
		encStatsOK, kvSame := true, true
		for _, mb := range pg.members {
			in := m.inputs[mb.ref.in]
			ch := in.chunks[mb.ref.rg][c]
			scm := in.md.RowGroups[mb.ref.rg].Columns[c].MetaData
			at := m.cw.n
			b, err := mb.bytes.slice(ch.start, ch.length)
			if err != nil {
				return err
			}
			if _, err := m.cw.Write(b); err != nil {
				return fmt.Errorf("datafile: stitching: %w", err)
			}
			for _, p := range ch.offsetIndex {
				pages = append(pages, metadata.PageLocation{Offset: p.Offset - ch.start + at,
					CompressedPageSize: p.CompressedPageSize, FirstRowIndex: p.FirstRowIndex + rowsBefore})
			}
			rowsBefore += mb.rows
			values += scm.NumValues
			compressed += scm.TotalCompressedSize
			uncompressed += scm.TotalUncompressedSize
			for _, e := range scm.Encodings {
				if !slices.Contains(encodings, e) {
					encodings = append(encodings, e)
				}
			}
			if len(scm.EncodingStats) == 0 {
				encStatsOK = false
			}
			for _, s := range scm.EncodingStats {
				found := false
				for _, t := range encStats {
					if t.PageType == s.PageType && t.Encoding == s.Encoding {
						t.Count += s.Count
						found = true
					}
				}
				if !found {
					cp := *s
					encStats = append(encStats, &cp)
				}
			}
			kvSame = kvSame && reflect.DeepEqual(scm.KeyValueMetadata, src.MetaData.KeyValueMetadata)
		}
		if compressed != m.cw.n-start {
			return fmt.Errorf("datafile: stitching: internal error: column %d: %d bytes copied, the chunks hold %d", c, m.cw.n-start, compressed)
		}
		cm.Encodings, cm.NumValues = encodings, values
		cm.TotalCompressedSize, cm.TotalUncompressedSize = compressed, uncompressed
		cm.DataPageOffset, cm.DictionaryPageOffset, cm.IndexPageOffset = start, nil, nil
		cm.BloomFilterOffset, cm.BloomFilterLength = nil, nil
		cm.SizeStatistics, cm.GeospatialStatistics = nil, nil
		cm.EncodingStats = nil
		if encStatsOK {
			cm.EncodingStats = encStats
		}
		if !kvSame {
			cm.KeyValueMetadata = nil
		}
		enc, minExact, maxExact, err := m.mergeStatistics(pg, c)
		if err != nil {
			return err
		}
		cm.Statistics = nil
		if enc.IsSet() {
			cm.Statistics = enc.ToThrift()
			cm.Statistics.IsMinValueExact, cm.Statistics.IsMaxValueExact = minExact, maxExact
		}
		cc.FileOffset = start
		nrg.Columns[c] = &cc
		index[c] = outChunk{columnIndex: pg.colIndex[c], pages: pages}
		totalC += compressed
		totalU += uncompressed
		m.res.CopiedChunks++
	}
	for c := range ncols {
		if pg.copied[c] {
			continue
		}
		bl := pg.subChunk[pg.subLeaf[c]].bloom
		if bl == nil {
			continue
		}
		at, n := m.cw.n, int32(len(bl))
		if _, err := m.cw.Write(bl); err != nil {
			return fmt.Errorf("datafile: stitching: %w", err)
		}
		nrg.Columns[c].MetaData.BloomFilterOffset, nrg.Columns[c].MetaData.BloomFilterLength = &at, &n
	}
	ord := int16(len(m.out.RowGroups))
	nrg.NumRows, nrg.TotalByteSize, nrg.TotalCompressedSize = pg.rows, totalU, &totalC
	nrg.FileOffset, nrg.Ordinal, nrg.SortingColumns = &groupStart, &ord, nil
	m.out.RowGroups = append(m.out.RowGroups, &nrg)
	m.index = append(m.index, index)
	m.res.MergedRowGroups++
	return nil
}

// mergeStatistics merges the footer statistics of leaf c of the group's source
// chunks with arrow-go's typed statistics (the order the Writer computed them
// by): min of the minima and max of the maxima when every chunk with non-null
// values has them, null counts summed when every chunk has one, no distinct
// count. An exactness flag is kept only when every chunk with a bound has it:
// exact when a chunk attaining the merged bound says so.
func (m *merger) mergeStatistics(pg *preparedGroup, c int) (enc metadata.EncodedStatistics, minExact, maxExact *bool, err error) {
	defer guard.Contain(&err, fmt.Sprintf("statistics of column %d", c))
	descr := m.out.Schema.Column(c)
	merged := metadata.NewStatistics(descr, memory.DefaultAllocator)
	var nulls int64
	nullsOK, boundsOK, have := true, true, false
	type bound struct {
		min, max   []byte
		minX, maxX *bool
	}
	var bounds []bound
	for _, mb := range pg.members {
		in := m.inputs[mb.ref.in]
		cc, err := in.md.RowGroup(mb.ref.rg).ColumnChunk(c)
		if err != nil {
			return enc, nil, nil, named(corruptf("row group %d column %d: %w", mb.ref.rg, c, err), in.src.Path)
		}
		st, err := cc.Statistics()
		if err != nil {
			return enc, nil, nil, named(corruptf("row group %d column %d statistics: %w", mb.ref.rg, c, err), in.src.Path)
		}
		if st == nil || !st.HasNullCount() {
			nullsOK = false
		} else {
			nulls += st.NullCount()
		}
		switch {
		case st != nil && st.HasMinMax():
			merged.Merge(st)
			have = true
			ts := in.md.RowGroups[mb.ref.rg].Columns[c].MetaData.Statistics
			bounds = append(bounds, bound{st.EncodeMin(), st.EncodeMax(), ts.IsMinValueExact, ts.IsMaxValueExact})
		case st != nil && st.HasNullCount() && st.NullCount() == cc.NumValues():
			// all null: no bounds to merge
		default:
			boundsOK = false
		}
	}
	if boundsOK && have {
		e, err := merged.Encode()
		if err != nil {
			return enc, nil, nil, fmt.Errorf("datafile: stitching: column %d statistics: %w", c, err)
		}
		enc.SetMin(e.Min).SetMax(e.Max)
		minAll, maxAll := true, true
		var minX, maxX bool
		for _, b := range bounds {
			minAll = minAll && b.minX != nil
			maxAll = maxAll && b.maxX != nil
			if b.minX != nil && *b.minX && bytes.Equal(b.min, e.Min) {
				minX = true
			}
			if b.maxX != nil && *b.maxX && bytes.Equal(b.max, e.Max) {
				maxX = true
			}
		}
		if minAll {
			minExact = &minX
		}
		if maxAll {
			maxExact = &maxX
		}
	}
	if nullsOK {
		enc.SetNullCount(nulls)
	}
	enc.Signed = descr.SortOrder() == schema.SortSIGNED
	return enc, minExact, maxExact, nil
}

// writeIndexes writes every chunk's column index, then every chunk's offset
// index, and points the footer at them.
func (m *merger) writeIndexes() error {
	for g, rg := range m.out.RowGroups {
		for c, cc := range rg.Columns {
			ci := m.index[g][c].columnIndex
			at, n := m.cw.n, int32(len(ci))
			if _, err := m.cw.Write(ci); err != nil {
				return fmt.Errorf("datafile: stitching: %w", err)
			}
			cc.ColumnIndexOffset, cc.ColumnIndexLength = &at, &n
		}
	}
	for g, rg := range m.out.RowGroups {
		for c, cc := range rg.Columns {
			var b metadata.OffsetIndexBuilder
			for _, p := range m.index[g][c].pages {
				if err := b.AddPage(p.Offset, p.FirstRowIndex, p.CompressedPageSize); err != nil {
					return fmt.Errorf("datafile: stitching: offset index: %w", err)
				}
			}
			if err := b.Finish(0); err != nil {
				return fmt.Errorf("datafile: stitching: offset index: %w", err)
			}
			at := m.cw.n
			if _, err := b.WriteTo(m.cw, nil); err != nil {
				return fmt.Errorf("datafile: stitching: %w", err)
			}
			n := int32(m.cw.n - at)
			cc.OffsetIndexOffset, cc.OffsetIndexLength = &at, &n
		}
	}
	return nil
}

// spanSet serves reads of a source from the byte ranges read into memory, and
// others (the footer) from f while it is open.
type spanSet struct {
	f     io.ReaderAt
	spans []span
}

type span struct {
	at int64
	b  []byte
}

// load reads the chunks' bytes into memory, contiguous chunks in one read.
func (s *spanSet) load(chunks []chunkCopy) error {
	rs := make([][2]int64, len(chunks))
	for i, ch := range chunks {
		rs[i] = [2]int64{ch.start, ch.start + ch.length}
	}
	sort.Slice(rs, func(a, b int) bool { return rs[a][0] < rs[b][0] })
	for i := 0; i < len(rs); {
		lo, hi := rs[i][0], rs[i][1]
		j := i + 1
		for j < len(rs) && rs[j][0] <= hi {
			hi = max(hi, rs[j][1])
			j++
		}
		b := make([]byte, hi-lo)
		if n, err := s.f.ReadAt(b, lo); n != len(b) {
			return corruptf("%d bytes at %d: %d read: %v", len(b), lo, n, err)
		}
		s.spans = append(s.spans, span{at: lo, b: b})
		i = j
	}
	return nil
}

// slice returns the n bytes at off, which lie in one span.
func (s *spanSet) slice(off, n int64) ([]byte, error) {
	for _, sp := range s.spans {
		if off >= sp.at && off+n <= sp.at+int64(len(sp.b)) {
			return sp.b[off-sp.at : off-sp.at+n], nil
		}
	}
	return nil, fmt.Errorf("datafile: stitching: internal error: %d bytes at %d not read", n, off)
}

// ReadAt implements io.ReaderAt.
func (s *spanSet) ReadAt(p []byte, off int64) (int, error) {
	if b, err := s.slice(off, int64(len(p))); err == nil {
		return copy(p, b), nil
	}
	if s.f == nil {
		return 0, fmt.Errorf("datafile: stitching: internal error: read of %d bytes at %d after the source was closed", len(p), off)
	}
	return s.f.ReadAt(p, off)
}
