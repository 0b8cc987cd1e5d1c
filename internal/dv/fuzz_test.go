package dv

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/storage"
)

// FuzzParseBitmap: arbitrary bytes either parse into a bitmap that re-serializes to the
// same set, or fail with an error; never a panic.
func FuzzParseBitmap(f *testing.F) {
	for _, bm := range []*roaring64.Bitmap{roaring64.New(), roaring64.BitmapOf(0, 9), roaring64.BitmapOf(1<<40, 1<<40+1)} {
		b, err := SerializeBitmap(bm)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xd1, 0xd3, 0x39, 0x64, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		bm, err := ParseBitmap(data)
		if err != nil {
			return
		}
		again, err := SerializeBitmap(bm.Clone())
		if err != nil {
			t.Fatalf("parsed bitmap does not serialize: %v", err)
		}
		bm2, err := ParseBitmap(again)
		if err != nil || !bm2.Equals(bm) {
			t.Fatalf("round trip changed the set: %v", err)
		}
	})
}

// FuzzLoadFile: arbitrary DV file bytes under a fixed descriptor never panic, and the
// whole-file and ranged readers agree (both fail, or both return the same rows).
func FuzzLoadFile(f *testing.F) {
	file, d, err := EncodeFile(roaring64.BitmapOf(0, 9), uuid.Nil, "")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(file, d.Offset, d.SizeInBytes)
	f.Add(file[:7], int32(1), int32(36))
	var two bytes.Buffer
	fw, _ := NewFileWriter(&two, uuid.Nil, "")
	fw.Add(roaring64.BitmapOf(1, 2, 3))
	d2, _ := fw.Add(roaring64.BitmapOf(1 << 33))
	f.Add(two.Bytes(), d2.Offset, d2.SizeInBytes)
	f.Fuzz(func(t *testing.T, data []byte, offset, size int32) {
		dd := d
		dd.Offset, dd.SizeInBytes = offset, size
		get := func(context.Context, string) ([]byte, error) { return data, nil }
		a, errA := Load(context.Background(), get, "", dd)
		mem := storage.NewMemory()
		rel, _ := dd.RelativePath("")
		if err := mem.Put(context.Background(), rel, data); err != nil {
			t.Fatal(err)
		}
		b, errB := LoadRange(context.Background(), mem.Open, "", dd)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("Load error %v, LoadRange error %v", errA, errB)
		}
		if errA == nil && !a.Bitmap().Equals(b.Bitmap()) {
			t.Fatal("Load and LoadRange disagree")
		}
	})
}

// FuzzWriteRoundTrip: row positions drawn from the input (8-byte little-endian values,
// the top bit cleared; a value with bit 62 set starts a run of up to 2^16 rows) are
// split into vectors, written with Write into packed files and inline descriptors, and
// must read back exactly.
func FuzzWriteRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0}, uint8(1), uint16(0))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 0x40, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, uint8(2), uint16(100))
	f.Add([]byte{5, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0x40}, uint8(3), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, parts uint8, target uint16) {
		n := int(parts%8) + 1
		bms := make([]*roaring64.Bitmap, n)
		for i := range bms {
			bms[i] = roaring64.New()
		}
		for i := 0; i+8 <= len(data) && i < 8*512; i += 8 {
			v := binary.LittleEndian.Uint64(data[i:]) &^ (1 << 63)
			bm := bms[(i/8)%n]
			if v&(1<<62) != 0 {
				v &^= 1 << 62
				bm.AddRange(v, v+uint64(data[i]&0x7f)<<9+1)
			} else {
				bm.Add(v)
			}
		}
		var in, want []*roaring64.Bitmap
		for _, bm := range bms {
			if !bm.IsEmpty() {
				in, want = append(in, bm), append(want, bm.Clone())
			}
		}
		st := storage.NewMemory()
		w, err := Write(context.Background(), st, in, WriteOptions{TargetFileSize: int64(target), InlineMaxBytes: int(target % 97)})
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range w.Descriptors {
			got, err := LoadRange(context.Background(), st.Open, "", FromLog(d))
			if err != nil {
				t.Fatalf("vector %d: %v", i, err)
			}
			if !got.Bitmap().Equals(want[i]) {
				t.Fatalf("vector %d: read back %d rows, wrote %d", i, got.Cardinality(), want[i].GetCardinality())
			}
		}
	})
}

// FuzzDecodeZ85 checks decode/encode agree on every valid input.
func FuzzDecodeZ85(f *testing.F) {
	f.Add("HelloWorld")
	f.Add("0X9F0q2<2yJ-f)Gm2!e0")
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := DecodeZ85(s)
		if err != nil {
			return
		}
		if EncodeZ85(raw) != s {
			t.Fatalf("re-encoding %q gives %q", s, EncodeZ85(raw))
		}
	})
}
