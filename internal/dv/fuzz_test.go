package dv

import (
	"context"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
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

// FuzzLoadFile: arbitrary DV file bytes under a fixed descriptor never panic.
func FuzzLoadFile(f *testing.F) {
	file, d, err := EncodeFile(roaring64.BitmapOf(0, 9), uuid.Nil, "")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(file, d.Offset, d.SizeInBytes)
	f.Add(file[:7], int32(1), int32(36))
	f.Fuzz(func(t *testing.T, data []byte, offset, size int32) {
		dd := d
		dd.Offset, dd.SizeInBytes = offset, size
		get := func(context.Context, string) ([]byte, error) { return data, nil }
		_, _ = Load(context.Background(), get, "", dd)
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
