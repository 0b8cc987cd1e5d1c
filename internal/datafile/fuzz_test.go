package datafile

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzOpenRead feeds arbitrary bytes to Open and Read: they must return errors, never
// panic (a panic inside arrow-go's decoders is a finding too). Seeded with a real small file and truncations of it.
func FuzzOpenRead(f *testing.F) {
	rec := allTypesBatch(f, memory.DefaultAllocator, 8, 0)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, rec.Schema(), WriterOptions{Codec: CodecUncompressed})
	if err != nil {
		f.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		f.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		f.Fatal(err)
	}
	rec.Release()
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[len(good)/2:])
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	want := allTypesSchema()
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
		if err != nil {
			return
		}
		defer r.Close()
		_ = r.Read(t.Context(), want, nil, func(arrow.RecordBatch, int64) error { return nil })
	})
}
