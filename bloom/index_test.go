package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/skiplake/skiplake/value"
)

func filterOf(t testing.TB, col string, vals ...value.Value) *Filter {
	t.Helper()
	b := mustBuilder(t, col)
	for _, v := range vals {
		if err := b.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	return mustFinish(t, b)
}

func sampleEntries(t testing.TB) []Entry {
	return []Entry{
		{DataPath: "part-0001.parquet", Filter: filterOf(t, "id", value.Int64(1), value.Int64(2))},
		{DataPath: "part-0001.parquet", Filter: filterOf(t, "email", value.String("a@x"), value.String("b@x"))},
		{DataPath: "date=2024-01-01/part 0002 %20.parquet", Filter: filterOf(t, "id", value.Int64(3))},
		{DataPath: "part-0003.parquet", Filter: filterOf(t, "amount", value.Decimal(decimal128.FromI64(-5), 10, 3))},
		{DataPath: "part-0004.parquet", Filter: filterOf(t, "id")}, // all NULL: holds no value
	}
}

// reseal recomputes the trailing CRC32C so structural corruption gets past the checksum.
func reseal(b []byte) []byte {
	b = append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[8:len(b)-4], castagnoli))
	return b
}

func TestIndexRoundTrip(t *testing.T) {
	entries := sampleEntries(t)
	var buf bytes.Buffer
	if err := WriteIndex(&buf, entries...); err != nil {
		t.Fatal(err)
	}
	ix, err := ReadIndex(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != len(entries) {
		t.Fatalf("Len = %d, want %d", ix.Len(), len(entries))
	}
	for i, e := range ix.Entries() {
		want := entries[i]
		if e.DataPath != want.DataPath || e.Filter.Column() != want.Filter.Column() || !sameFilter(e.Filter, want.Filter) {
			t.Fatalf("entry %d: got %q/%q, want %q/%q or filter differs", i, e.DataPath, e.Filter.Column(), want.DataPath, want.Filter.Column())
		}
		got, ok := ix.Filter(want.DataPath, want.Filter.Column())
		if !ok || got != e.Filter {
			t.Fatalf("Filter(%q, %q) lookup failed", want.DataPath, want.Filter.Column())
		}
	}
	if _, ok := ix.Filter("part-0001.parquet", "nope"); ok {
		t.Fatal("lookup of an uncovered column succeeded")
	}
	if _, ok := ix.Filter("part-9999.parquet", "id"); ok {
		t.Fatal("lookup of an uncovered file succeeded")
	}
	again, err := MarshalIndex(ix.Entries()...)
	if err != nil || !bytes.Equal(again, buf.Bytes()) {
		t.Fatalf("re-encoding is not byte-identical (err %v)", err)
	}
	f, _ := ix.Filter("part-0001.parquet", "email")
	if !f.MightContain(value.String("a@x")) || f.Kind() != value.KindString {
		t.Fatal("decoded filter lost its value or kind")
	}
	d, _ := ix.Filter("part-0003.parquet", "amount")
	if d.Scale() != 3 || !d.MightContain(value.Decimal(decimal128.FromI64(-50), 10, 4)) {
		t.Fatal("decoded decimal filter lost its scale")
	}
	empty, _ := ix.Filter("part-0004.parquet", "id")
	if empty.MightContain(value.Int64(1)) {
		t.Fatal("all-null file's filter claims a value")
	}
}

func TestEmptyIndexRoundTrip(t *testing.T) {
	data, err := MarshalIndex()
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ReadIndex(data)
	if err != nil || ix.Len() != 0 {
		t.Fatalf("empty index: %v, len %d", err, ix.Len())
	}
}

func TestWriteIndexRejects(t *testing.T) {
	f := filterOf(t, "id", value.Int64(1))
	long := string(bytes.Repeat([]byte("x"), 70000))
	tests := []struct {
		name    string
		entries []Entry
	}{
		{"nil filter", []Entry{{DataPath: "a", Filter: nil}}},
		{"empty data path", []Entry{{DataPath: "", Filter: f}}},
		{"over-long data path", []Entry{{DataPath: long, Filter: f}}},
		{"duplicate path and column", []Entry{{DataPath: "a", Filter: f}, {DataPath: "a", Filter: f}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteIndex(&buf, tc.entries...)
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("err = %v, want ErrInvalidArgument", err)
			}
			if buf.Len() != 0 {
				t.Fatal("bytes written before the error")
			}
		})
	}
}

func TestReadIndexRejectsCorruption(t *testing.T) {
	good, err := MarshalIndex(sampleEntries(t)...)
	if err != nil {
		t.Fatal(err)
	}
	one, err := MarshalIndex(Entry{DataPath: "p", Filter: filterOf(t, "c", value.Int64(1))})
	if err != nil {
		t.Fatal(err)
	}
	// offsets inside `one`: header 16, path len 2 + "p", col len 2 + "c" → fixed part at 22
	const fixed = 16 + 2 + 1 + 2 + 1
	patch := func(src []byte, off int, b ...byte) []byte {
		out := append([]byte(nil), src...)
		copy(out[off:], b)
		return out
	}
	put64 := func(src []byte, off int, v uint64) []byte {
		out := append([]byte(nil), src...)
		binary.LittleEndian.PutUint64(out[off:], v)
		return out
	}
	dup, _ := MarshalIndex(Entry{DataPath: "p", Filter: filterOf(t, "c", value.Int64(1))},
		Entry{DataPath: "q", Filter: filterOf(t, "c", value.Int64(1))})
	dup = bytes.Replace(dup, []byte{1, 0, 'q'}, []byte{1, 0, 'p'}, 1)

	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty input is truncated", nil, ErrTruncated},
		{"magic prefix is truncated", []byte("SKLB"), ErrTruncated},
		{"other bytes are bad magic", []byte("PAR1xxxxxxxxxxxxxxxxxxxx"), ErrBadMagic},
		{"short garbage is bad magic", []byte("xy"), ErrBadMagic},
		{"magic without version is truncated", []byte("SKLBLOOM\x01"), ErrTruncated},
		{"version 2 is unsupported", reseal(patch(good, 8, 2, 0)), ErrUnsupportedVersion},
		{"header without checksum is truncated", good[:18], ErrTruncated},
		{"flipped bit fails the checksum", patch(good, 40, good[40]^0x10), ErrChecksum},
		{"cut file fails the checksum", good[:len(good)-9], ErrChecksum},
		{"unknown flags are corrupt", reseal(patch(good, 10, 1)), ErrCorrupt},
		{"entry count beyond the data is corrupt", reseal(patch(good, 12, 0xff, 0xff, 0xff, 0x7f)), ErrCorrupt},
		{"one entry too many is corrupt", reseal(patch(one, 12, 2)), ErrCorrupt},
		{"fewer entries leave trailing bytes", reseal(patch(dup, 12, 1)), ErrCorrupt},
		{"unknown kind is corrupt", reseal(patch(one, fixed, 99)), ErrCorrupt},
		{"scale on an int filter is corrupt", reseal(patch(one, fixed+1, 3)), ErrCorrupt},
		{"k of zero is corrupt", reseal(patch(one, fixed+2, 0)), ErrCorrupt},
		{"k above MaxK is corrupt", reseal(patch(one, fixed+2, MaxK+1)), ErrCorrupt},
		{"reserved byte is corrupt", reseal(patch(one, fixed+3, 1)), ErrCorrupt},
		{"m of zero is corrupt", reseal(put64(one, fixed+12, 0)), ErrCorrupt},
		{"huge m is corrupt, not allocated", reseal(put64(one, fixed+12, 1<<60)), ErrCorrupt},
		{"m larger than the bitset is corrupt", reseal(put64(one, fixed+12, 64*1000)), ErrCorrupt},
		{"bits beyond m are corrupt", reseal(put64(one, fixed+12, 1)), ErrCorrupt},
		{"m needing more words than present is corrupt", reseal(put64(one, fixed+12, 65)), ErrCorrupt},
		{"kind null with values is corrupt", reseal(patch(one, fixed, 0)), ErrCorrupt},
		{"duplicate entry is corrupt", reseal(dup), ErrCorrupt},
		{"empty data path is corrupt", reseal(patch(one, 16, 0, 0)), ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := ReadIndex(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadIndex = %v, %v; want %v", ix, err, tc.want)
			}
		})
	}
	t.Run("every prefix of a valid file is rejected", func(t *testing.T) {
		for n := 0; n < len(good); n++ {
			if _, err := ReadIndex(good[:n]); err == nil {
				t.Fatalf("prefix of %d/%d bytes accepted", n, len(good))
			}
		}
	})
}
