package datafile

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"
)

// longRepeatBatch is one binary column whose values are a block of random bytes
// written twice: the second copy is a match at a distance of 3 MiB, which zstd's
// default windows (4 MiB at the fastest level, 8 MiB above) find and skiplake's page
// encoders (zstdWindow, 2 MiB) do not, so the two encoders give different bytes for a
// page that holds the whole column.
func longRepeatBatch(t testing.TB) arrow.RecordBatch {
	t.Helper()
	const values, size = 3 << 10, 1 << 10 // 3 MiB
	rng := rand.New(rand.NewPCG(26, 3))
	block := make([][]byte, values)
	for i := range block {
		block[i] = make([]byte, size)
		for j := range block[i] {
			block[i][j] = byte(rng.Uint32())
		}
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "blob", Type: arrow.BinaryTypes.Binary}}, nil)
	b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer b.Release()
	for range 2 {
		for _, v := range block {
			b.Append(v)
		}
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(sc, []arrow.Array{col}, int64(col.Len()))
}

// otherWriterProperties are the properties of the other writer in
// TestOtherWritersKeepArrowGoZstd, the same as testdata/plainpqarrow's
// writerProperties: zstd at level, one data page for the whole column.
func otherWriterProperties(level int, pageBytes int64) *parquet.WriterProperties {
	return parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(level),
		parquet.WithDataPageSize(pageBytes), parquet.WithDictionaryDefault(false), parquet.WithCreatedBy("plainpqarrow"))
}

// TestOtherWritersKeepArrowGoZstd: a plain pqarrow writer in a process that imports
// skiplake (this test binary, which has just written a file with skiplake's own
// encoders) writes exactly the bytes it writes in a process without skiplake
// (testdata/plainpqarrow, run with go run), at zstd's default level and at explicit
// ones. skiplake's page-window zstd encoders serve skiplake's writers only. The data
// is chosen so that those encoders would give other bytes (checked as a control), so
// the comparison fails if they leak into other writers.
func TestOtherWritersKeepArrowGoZstd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a separate program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH:", err)
	}
	rec := longRepeatBatch(t)
	defer rec.Release()
	const pageBytes = 8 << 20

	// skiplake's encoders are live in this process, and differ on this data.
	var own bytes.Buffer
	w, err := NewWriter(&own, rec.Schema(), WriterOptions{DataPageBytes: pageBytes, Dictionary: DictionaryNone})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	_, err = w.Close()
	require.NoError(t, err)
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	require.NoError(t, err)
	page := append([]byte(nil), rec.Column(0).(*array.Binary).ValueBytes()...)
	require.NotEqual(t, codec.EncodeLevel(nil, page, DefaultZstdLevel), codec.EncodeLevel(nil, page, pageZstdLevel(DefaultZstdLevel)),
		"control: skiplake's encoder gives arrow-go's bytes on this data; the comparison below would prove nothing")

	dir := t.TempDir()
	in := filepath.Join(dir, "in.arrow")
	f, err := os.Create(in)
	require.NoError(t, err)
	iw, err := ipc.NewFileWriter(f, ipc.WithSchema(rec.Schema()))
	require.NoError(t, err)
	require.NoError(t, iw.Write(rec))
	require.NoError(t, iw.Close())
	require.NoError(t, f.Close())

	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	for _, level := range []int{compress.DefaultCompressionLevel, 1, DefaultZstdLevel} {
		var got bytes.Buffer
		require.NoError(t, pqarrow.WriteTable(tbl, &got, tbl.NumRows(), otherWriterProperties(level, pageBytes), pqarrow.DefaultWriterProps()))

		out := filepath.Join(dir, "level"+strconv.Itoa(level)+".parquet")
		cmd := exec.Command(goTool, "run", "./testdata/plainpqarrow", "-level", strconv.Itoa(level), "-page-bytes", strconv.Itoa(pageBytes), in, out)
		msg, err := cmd.CombinedOutput()
		require.NoError(t, err, "go run ./testdata/plainpqarrow: %s", msg)
		want, err := os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got.Bytes()),
			"level %d: pqarrow wrote %d bytes beside skiplake, %d bytes in a process without it", level, got.Len(), len(want))
	}
}
