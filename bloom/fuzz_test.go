package bloom

import (
	"bytes"
	"testing"

	"github.com/skiplake/skiplake/value"
)

// FuzzReadIndex: ReadIndex never panics, and whatever it accepts re-encodes to the
// identical bytes (the format has exactly one encoding per index).
func FuzzReadIndex(f *testing.F) {
	good, err := MarshalIndex(sampleEntries(f)...)
	if err != nil {
		f.Fatal(err)
	}
	one, _ := MarshalIndex(Entry{DataPath: "p", Filter: filterOf(f, "c", value.Int64(1))})
	empty, _ := MarshalIndex()
	f.Add(good)
	f.Add(one)
	f.Add(empty)
	f.Add(good[:20])
	f.Add([]byte("SKLBLOOM"))
	f.Add(reseal(append([]byte(nil), one...)))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := ReadIndex(data)
		if err != nil {
			return
		}
		again, err := MarshalIndex(ix.Entries()...)
		if err != nil {
			t.Fatalf("accepted index does not re-encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs:\n in  %x\n out %x", data, again)
		}
	})
}

// FuzzDecodeTag: DecodeTag never panics, and an accepted tag survives EncodeTag.
func FuzzDecodeTag(f *testing.F) {
	f.Add(`{"v":1,"path":"_delta_index/bloom/0a.bin","cols":["id","e"]}`)
	f.Add(`{"v":2,"path":"_delta_index/bloom/0a.bin","cols":["id"]}`)
	f.Add(`{"v":1,"path":"_delta_index/bloom/../x","cols":["id"]}`)
	f.Add(`{"v":1}`)
	f.Add(`[]`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, s string) {
		tag, err := DecodeTag(s)
		if err != nil {
			return
		}
		enc, err := EncodeTag(tag)
		if err != nil {
			t.Fatalf("accepted tag does not encode: %v", err)
		}
		back, err := DecodeTag(enc)
		if err != nil || back.Path != tag.Path || len(back.Columns) != len(tag.Columns) {
			t.Fatalf("round trip of %q: %+v, %v", s, back, err)
		}
		for i := range back.Columns {
			if back.Columns[i] != tag.Columns[i] {
				t.Fatalf("column %d: %q != %q", i, back.Columns[i], tag.Columns[i])
			}
		}
	})
}
