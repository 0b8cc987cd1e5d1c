package datafile

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/pqguard"
)

// arrowSchemaEntry returns the decoded ARROW:schema footer entry of a file of every
// type this package writes.
func arrowSchemaEntry(t *testing.T) []byte {
	t.Helper()
	rec := allTypesBatch(t, memory.DefaultAllocator, 4, 0)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, rec.Schema(), WriterOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	_, err = w.Close()
	require.NoError(t, err)
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	v := r.Metadata().KeyValueMetadata().FindValue("ARROW:schema")
	require.NotNil(t, v)
	raw, err := base64.StdEncoding.DecodeString(*v)
	require.NoError(t, err)
	return raw
}

// checkSchemaMessage checks raw as the ARROW:schema entry of a footer.
func checkSchemaMessage(raw []byte) error {
	kv := metadata.NewKeyValueMetadata()
	if err := kv.Append("ARROW:schema", base64.StdEncoding.EncodeToString(raw)); err != nil {
		return err
	}
	return pqguard.CheckArrowSchema(kv)
}

// TestCheckSchemaMessage writes large lengths over every 4 bytes of a real ARROW:schema
// entry (of a file with every type this package writes): pqguard.CheckArrowSchema accepts the intact entry, and every damaged entry it
// accepts is one arrow-go decodes (or refuses) without allocating more than a few
// megabytes (a length it missed would be an allocation of gigabytes).
func TestCheckSchemaMessage(t *testing.T) {
	raw := arrowSchemaEntry(t)
	require.NoError(t, checkSchemaMessage(raw))
	refused := 0
	var ms runtime.MemStats
	for at := 0; at+4 <= len(raw); at++ {
		for _, v := range []uint32{0x7fffffff, 0xffffffff, 0x10000000, 0x00ffffff} {
			bad := bytes.Clone(raw)
			binary.LittleEndian.PutUint32(bad[at:], v)
			if err := checkSchemaMessage(bad); err != nil {
				refused++
				continue
			}
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			func() {
				defer func() { _ = recover() }() // arrow-go's own panics are contained elsewhere
				_, _ = flight.DeserializeSchema(bad, memory.DefaultAllocator)
			}()
			runtime.ReadMemStats(&ms)
			require.Less(t, ms.TotalAlloc-before, uint64(16<<20), "accepted damage at byte %d (%#x) allocated %d bytes", at, v, ms.TotalAlloc-before)
		}
	}
	require.Positive(t, refused)
	for _, c := range [][]byte{nil, {0xff, 0xff, 0xff, 0xff}, {0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0, 1}} {
		require.Error(t, checkSchemaMessage(c), "%x", c)
	}
}

// TestCorruptErrorNamesFile checks the error chain of a damaged file's error.
func TestCorruptErrorNamesFile(t *testing.T) {
	_, err := Open(bytes.NewReader([]byte("PAR1 not a footer PAR1")), 22, ReadOptions{Name: "dir/f.parquet"})
	require.ErrorIs(t, err, ErrCorruptData)
	var ce *CorruptError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "dir/f.parquet", ce.File)
	require.Contains(t, err.Error(), "datafile: dir/f.parquet: corrupt Parquet: footer")
}
