package bloom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/skiplake/skiplake/value"
)

// Index file layout, format version 1. All integers are little-endian.
//
//	offset  size        field
//	0       8           magic "SKLBLOOM"
//	8       2           format version (1)
//	10      2           flags (0; readers reject anything else)
//	12      4           entry count N
//	16      ...         N entries, each:
//	                      2    data file path length P
//	                      P    data file path (exactly add.path)
//	                      2    column name length C
//	                      C    column name
//	                      1    value kind (value.Kind; 0 = holds no value)
//	                      1    decimal scale (0 unless the kind is decimal)
//	                      1    k, hash probes per value (1..MaxK)
//	                      1    reserved (0)
//	                      8    distinct value count
//	                      8    m, filter size in bits (>= 1)
//	                      8·⌈m/64⌉ bitset words (bit i of the filter is bit i%64 of word i/64)
//	end-4   4           CRC32C (Castagnoli) of bytes [8, end-4): version through last entry
const (
	// Magic starts every index file.
	Magic = "SKLBLOOM"
	// FormatVersion is the index file (and tag) format version this package writes.
	FormatVersion = 1

	headerLen     = 16
	trailerLen    = 4
	entryFixedLen = 2 + 2 + 4 + 8 + 8 // lengths, kind/scale/k/reserved, distinct, m
	maxNameLen    = math.MaxUint16
	maxDecimalDig = 38
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry pairs a data file with the Filter of one of its columns. An index file holds
// any number of entries, at most one per (DataPath, column).
type Entry struct {
	// DataPath is the data file's path exactly as its add action states it.
	DataPath string
	// Filter is the column's filter; its Column names the column.
	Filter *Filter
}

type entryKey struct{ path, column string }

// Index is a decoded index file: the filters of the (data file, column) pairs it
// covers. It is immutable and safe for concurrent use.
type Index struct {
	entries []Entry
	byKey   map[entryKey]*Filter
}

// Filter returns the filter of column in dataPath; ok is false when the index does
// not cover that pair (the file must then be read, invariant B1).
func (ix *Index) Filter(dataPath, column string) (f *Filter, ok bool) {
	if ix == nil {
		return nil, false
	}
	f, ok = ix.byKey[entryKey{dataPath, column}]
	return f, ok
}

// Len returns the number of entries.
func (ix *Index) Len() int { return len(ix.entries) }

// Entries returns the entries in file order. The slice is a copy; the Filters are shared.
func (ix *Index) Entries() []Entry { return append([]Entry(nil), ix.entries...) }

// MarshalIndex encodes entries as an index file (see WriteIndex).
func MarshalIndex(entries ...Entry) ([]byte, error) {
	seen := make(map[entryKey]struct{}, len(entries))
	size := headerLen + trailerLen
	for i, e := range entries {
		if e.Filter == nil {
			return nil, fmt.Errorf("%w: index entry %d (%q): nil filter", ErrInvalidArgument, i, e.DataPath)
		}
		col := e.Filter.column
		switch {
		case e.DataPath == "" || len(e.DataPath) > maxNameLen:
			return nil, fmt.Errorf("%w: index entry %d: data path length %d outside [1, %d]", ErrInvalidArgument, i, len(e.DataPath), maxNameLen)
		case col == "" || len(col) > maxNameLen:
			return nil, fmt.Errorf("%w: index entry %d (%q): column name length %d outside [1, %d]", ErrInvalidArgument, i, e.DataPath, len(col), maxNameLen)
		}
		k := entryKey{e.DataPath, col}
		if _, dup := seen[k]; dup {
			return nil, fmt.Errorf("%w: index entry %d: duplicate data path %q column %q", ErrInvalidArgument, i, e.DataPath, col)
		}
		seen[k] = struct{}{}
		size += entryFixedLen + len(e.DataPath) + len(col) + 8*len(e.Filter.bf.BitSet().Words())
	}
	if len(entries) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d entries exceed the format's limit", ErrInvalidArgument, len(entries))
	}
	buf := make([]byte, 0, size)
	buf = append(buf, Magic...)
	buf = binary.LittleEndian.AppendUint16(buf, FormatVersion)
	buf = binary.LittleEndian.AppendUint16(buf, 0)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(entries)))
	for _, e := range entries {
		f := e.Filter
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(e.DataPath)))
		buf = append(buf, e.DataPath...)
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(f.column)))
		buf = append(buf, f.column...)
		buf = append(buf, byte(f.kind), byte(f.scale), byte(f.bf.K()), 0)
		buf = binary.LittleEndian.AppendUint64(buf, f.distinct)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(f.bf.Cap()))
		words := f.bf.BitSet().Words()
		want := wordsFor(uint64(f.bf.Cap()))
		for i := uint64(0); i < want; i++ {
			var w uint64
			if i < uint64(len(words)) {
				w = words[i]
			}
			buf = binary.LittleEndian.AppendUint64(buf, w)
		}
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf[len(Magic):], castagnoli)), nil
}

// WriteIndex writes entries to w as one index file (layout above). It fails with
// ErrInvalidArgument on a nil filter, an empty or over-long path or column name, or
// a duplicate (data path, column) pair, before writing anything.
func WriteIndex(w io.Writer, entries ...Entry) error {
	data, err := MarshalIndex(entries...)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("bloom: writing index: %w", err)
	}
	return nil
}

func wordsFor(m uint64) uint64 { return (m + 63) / 64 }

// ReadIndex decodes an index file. Corrupt input never panics: it yields an error
// wrapping ErrBadMagic, ErrUnsupportedVersion, ErrTruncated, ErrChecksum or
// ErrCorrupt that names the entry and field at fault. The returned Index does not
// retain data.
func ReadIndex(data []byte) (*Index, error) {
	if len(data) < len(Magic) {
		if bytes.HasPrefix([]byte(Magic), data) {
			return nil, fmt.Errorf("%w: %d bytes, shorter than the magic", ErrTruncated, len(data))
		}
		return nil, fmt.Errorf("%w: %q", ErrBadMagic, data)
	}
	if string(data[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("%w: %q", ErrBadMagic, data[:len(Magic)])
	}
	if len(data) < len(Magic)+2 {
		return nil, fmt.Errorf("%w: %d bytes, no version", ErrTruncated, len(data))
	}
	if v := binary.LittleEndian.Uint16(data[8:]); v != FormatVersion {
		return nil, fmt.Errorf("%w: %d (this reader knows %d)", ErrUnsupportedVersion, v, FormatVersion)
	}
	if len(data) < headerLen+trailerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than header and checksum", ErrTruncated, len(data))
	}
	body := data[:len(data)-trailerLen]
	want := binary.LittleEndian.Uint32(data[len(data)-trailerLen:])
	if got := crc32.Checksum(body[len(Magic):], castagnoli); got != want {
		return nil, fmt.Errorf("%w: stored %08x, computed %08x over %d bytes", ErrChecksum, want, got, len(body)-len(Magic))
	}
	if flags := binary.LittleEndian.Uint16(data[10:]); flags != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#04x", ErrCorrupt, flags)
	}
	count := binary.LittleEndian.Uint32(data[12:])
	rd := reader{buf: body, off: headerLen}
	if uint64(count)*(entryFixedLen+2) > uint64(len(body)-headerLen) {
		return nil, fmt.Errorf("%w: %d entries cannot fit in %d bytes", ErrCorrupt, count, len(body)-headerLen)
	}
	ix := &Index{entries: make([]Entry, 0, count), byKey: make(map[entryKey]*Filter, count)}
	for i := uint32(0); i < count; i++ {
		start := rd.off
		e, err := readEntry(&rd)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d at offset %d: %v", ErrCorrupt, i, start, err)
		}
		k := entryKey{e.DataPath, e.Filter.column}
		if _, dup := ix.byKey[k]; dup {
			return nil, fmt.Errorf("%w: entry %d: duplicate data path %q column %q", ErrCorrupt, i, k.path, k.column)
		}
		ix.byKey[k] = e.Filter
		ix.entries = append(ix.entries, e)
	}
	if rd.off != len(body) {
		return nil, fmt.Errorf("%w: %d trailing bytes after %d entries", ErrCorrupt, len(body)-rd.off, count)
	}
	return ix, nil
}

type reader struct {
	buf []byte
	off int
}

func (r *reader) take(n uint64, what string) ([]byte, error) {
	if n > uint64(len(r.buf)-r.off) {
		return nil, fmt.Errorf("%s needs %d bytes, %d left", what, n, len(r.buf)-r.off)
	}
	b := r.buf[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *reader) name(what string) (string, error) {
	l, err := r.take(2, what+" length")
	if err != nil {
		return "", err
	}
	b, err := r.take(uint64(binary.LittleEndian.Uint16(l)), what)
	if err != nil {
		return "", err
	}
	if len(b) == 0 {
		return "", fmt.Errorf("empty %s", what)
	}
	return string(b), nil
}

func readEntry(r *reader) (Entry, error) {
	path, err := r.name("data path")
	if err != nil {
		return Entry{}, err
	}
	col, err := r.name("column name")
	if err != nil {
		return Entry{}, fmt.Errorf("data path %q: %v", path, err)
	}
	fixed, err := r.take(20, "entry header")
	if err != nil {
		return Entry{}, fmt.Errorf("data path %q column %q: %v", path, col, err)
	}
	kind, scale, k := value.Kind(fixed[0]), int32(fixed[1]), uint(fixed[2])
	distinct := binary.LittleEndian.Uint64(fixed[4:])
	m := binary.LittleEndian.Uint64(fixed[12:])
	bad := func(format string, args ...any) (Entry, error) {
		return Entry{}, fmt.Errorf("data path %q column %q: "+format, append([]any{path, col}, args...)...)
	}
	switch {
	case kind > value.KindTimestampNTZ:
		return bad("unknown value kind %d", kind)
	case kind == value.KindNull && distinct != 0:
		return bad("kind null with %d distinct values", distinct)
	case scale > maxDecimalDig || (scale != 0 && kind != value.KindDecimal):
		return bad("decimal scale %d invalid for kind %s", scale, kind)
	case k < 1 || k > MaxK:
		return bad("k=%d outside [1, %d]", k, MaxK)
	case fixed[3] != 0:
		return bad("reserved byte %#02x", fixed[3])
	case m < 1 || m > math.MaxInt64/2:
		return bad("m=%d bits invalid", m)
	}
	nw := wordsFor(m)
	raw, err := r.take(nw*8, "bitset")
	if err != nil {
		return bad("%v", err)
	}
	words := make([]uint64, nw)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	if tail := m % 64; tail != 0 && words[nw-1]>>tail != 0 {
		return bad("bits set beyond m=%d", m)
	}
	f := &Filter{column: col, kind: kind, scale: scale, distinct: distinct, bf: bloom.FromWithM(words, uint(m), k)}
	return Entry{DataPath: path, Filter: f}, nil
}
