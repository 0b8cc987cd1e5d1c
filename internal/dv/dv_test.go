package dv

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skiplake/skiplake/internal/goldentest"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
)

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t testing.TB) string { return goldentest.Dir(t) }

func dirGetter(root string) GetFunc {
	return func(_ context.Context, p string) ([]byte, error) {
		return os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	}
}

func mapGetter(m map[string][]byte) GetFunc {
	return func(_ context.Context, p string) ([]byte, error) {
		b, ok := m[p]
		if !ok {
			return nil, fmt.Errorf("no object %q", p)
		}
		return b, nil
	}
}

// goldenDescriptors parses the table's commit files and returns every add's DV descriptor.
func goldenDescriptors(t *testing.T, table string) []Descriptor {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(table, "_delta_log", "*.json"))
	require.NoError(t, err)
	var out []Descriptor
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var a struct {
				Add *struct {
					DV *struct {
						StorageType    string `json:"storageType"`
						PathOrInlineDv string `json:"pathOrInlineDv"`
						Offset         *int32 `json:"offset"`
						SizeInBytes    int32  `json:"sizeInBytes"`
						Cardinality    int64  `json:"cardinality"`
					} `json:"deletionVector"`
				} `json:"add"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
			if a.Add == nil || a.Add.DV == nil {
				continue
			}
			d := Descriptor{StorageType: a.Add.DV.StorageType, PathOrInlineDv: a.Add.DV.PathOrInlineDv,
				SizeInBytes: a.Add.DV.SizeInBytes, Cardinality: a.Add.DV.Cardinality}
			if a.Add.DV.Offset != nil {
				d.Offset = *a.Add.DV.Offset
			}
			out = append(out, d)
		}
		fh.Close()
	}
	return out
}

func TestZ85SpecVector(t *testing.T) {
	raw := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	require.Equal(t, "HelloWorld", EncodeZ85(raw))
	got, err := DecodeZ85("HelloWorld")
	require.NoError(t, err)
	require.Equal(t, raw, got)

	for _, bad := range []string{"Hell", "Hello World", "%%%%%", "#####"} {
		_, err := DecodeZ85(bad)
		require.ErrorIs(t, err, ErrZ85, bad)
	}
}

func TestGoldenTableWithDVSmallDeletesRowsZeroAndNine(t *testing.T) {
	table := filepath.Join(goldenDir(t), "delta-kernel-rs", "table-with-dv-small", "delta")
	ds := goldenDescriptors(t, table)
	require.Len(t, ds, 1)
	rel, err := ds[0].RelativePath("")
	require.NoError(t, err)
	require.Equal(t, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin", rel)
	del, err := Load(t.Context(), dirGetter(table), "", ds[0])
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 9}, del.Bitmap().ToArray())
	require.True(t, del.Contains(9))
	require.False(t, del.Contains(1))
}

func TestGoldenDeletionVectorsAllVerify(t *testing.T) {
	for _, name := range []string{"dv-partitioned-with-checkpoint", "log-replay-dv-key-cases"} {
		t.Run(name, func(t *testing.T) {
			table := filepath.Join(goldenDir(t), "delta-golden", name, "delta")
			ds := goldenDescriptors(t, table)
			require.NotEmpty(t, ds)
			for _, d := range ds {
				del, err := Load(t.Context(), dirGetter(table), "", d)
				require.NoError(t, err, "%+v", d)
				require.Equal(t, uint64(d.Cardinality), del.Cardinality())
			}
		})
	}
}

func randomBitmap(r *rand.Rand) *roaring64.Bitmap {
	bm := roaring64.New()
	switch r.IntN(4) {
	case 0: // sparse
		for range r.IntN(50) {
			bm.Add(r.Uint64N(1 << 20))
		}
	case 1: // a run
		start := r.Uint64N(1 << 40)
		bm.AddRange(start, start+r.Uint64N(200_000)+1)
	case 2: // several 32-bit buckets
		for range r.IntN(300) {
			bm.Add(r.Uint64N(1<<34) | uint64(r.IntN(4))<<40)
		}
	case 3: // dense
		for i := range uint64(70_000) {
			if r.IntN(3) == 0 {
				bm.Add(i)
			}
		}
	}
	return bm
}

func TestEncodeLoadRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		bm := randomBitmap(r)
		want := bm.Clone()
		id := uuid.New()
		prefix := []string{"", "ab"}[i%2]
		file, d, err := EncodeFile(bm, id, prefix)
		require.NoError(t, err)
		rel, err := d.RelativePath("")
		require.NoError(t, err)
		if prefix == "" {
			require.Equal(t, "deletion_vector_"+id.String()+".bin", rel)
		} else {
			require.Equal(t, "ab/deletion_vector_"+id.String()+".bin", rel)
		}
		got, err := Load(t.Context(), mapGetter(map[string][]byte{rel: file}), "", d)
		require.NoError(t, err)
		require.True(t, want.Equals(got.Bitmap()), "case %d file", i)

		inl, err := EncodeInline(bm)
		require.NoError(t, err)
		got, err = Load(t.Context(), nil, "", inl)
		require.NoError(t, err)
		require.True(t, want.Equals(got.Bitmap()), "case %d inline", i)
	}
}

func TestAbsolutePathsMustStayInsideTheTable(t *testing.T) {
	bm := roaring64.BitmapOf(3)
	file, d, err := EncodeFile(bm, uuid.New(), "")
	require.NoError(t, err)
	name, _ := d.RelativePath("")
	get := mapGetter(map[string][]byte{"sub/" + name: file})
	cases := []struct {
		name, root, abs string
		wantErr         error
	}{
		{"file URI under the root", "file:///data/t", "file:/data/t/sub/" + name, nil},
		{"plain path under a URI root", "file:///data/t/", "/data/t/sub/" + name, nil},
		{"percent-encoded path", "/data/my%20t", "file:///data/my%20t/sub/" + name, nil},
		{"sibling directory", "/data/t", "/data/t2/sub/" + name, ErrOutsideTable},
		{"dot-dot escape", "/data/t", "/data/t/../x/" + name, ErrOutsideTable},
		{"other scheme", "/data/t", "s3://bucket/data/t/sub/" + name, ErrOutsideTable},
		{"no root", "", "/data/t/sub/" + name, ErrOutsideTable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pd := d
			pd.StorageType, pd.PathOrInlineDv = StorageAbsolute, tc.abs
			got, err := Load(t.Context(), get, tc.root, pd)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.True(t, got.Contains(3))
		})
	}
}

func TestLoadRejectsCorruption(t *testing.T) {
	bm := roaring64.BitmapOf(1, 5, 1<<33)
	file, d, err := EncodeFile(bm, uuid.MustParse("61d16c75-6994-46b7-a15b-8b538852e50e"), "")
	require.NoError(t, err)
	rel, _ := d.RelativePath("")
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), file...)) }
	cases := []struct {
		name string
		data []byte
		d    Descriptor
		want error
	}{
		{"bad version byte", mut(func(b []byte) []byte { b[0] = 2; return b }), d, ErrCorrupt},
		{"flipped bitmap byte fails the checksum", mut(func(b []byte) []byte { b[12] ^= 1; return b }), d, ErrCorrupt},
		{"bad magic with matching checksum", mut(func(b []byte) []byte {
			b[5] ^= 1
			end := 5 + int(d.SizeInBytes)
			return binary.BigEndian.AppendUint32(b[:end], crc32.ChecksumIEEE(b[5:end]))
		}), d, ErrCorrupt},
		{"truncated", file[:len(file)-3], d, ErrCorrupt},
		{"descriptor size differs", file, withSize(d, d.SizeInBytes+1), ErrCorrupt},
		{"descriptor cardinality differs", file, withCard(d, 2), ErrCorrupt},
		{"offset past the end", file, withOffset(d, int32(len(file))), ErrCorrupt},
		{"offset zero points at the version byte", file, withOffset(d, 0), ErrCorrupt},
		{"unknown storage type", file, Descriptor{StorageType: "x"}, ErrInvalidDescriptor},
		{"short u path", file, Descriptor{StorageType: "u", PathOrInlineDv: "abc"}, ErrInvalidDescriptor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(t.Context(), mapGetter(map[string][]byte{rel: tc.data}), "", tc.d)
			require.ErrorIs(t, err, tc.want)
			var le *LoadError
			require.True(t, errors.As(err, &le))
			require.Contains(t, err.Error(), fmt.Sprintf("offset %d", tc.d.Offset))

			mem := storage.NewMemory()
			require.NoError(t, mem.Put(t.Context(), rel, tc.data))
			_, err = LoadRange(t.Context(), mem.Open, "", tc.d)
			require.ErrorIs(t, err, tc.want, "LoadRange")
			require.True(t, errors.As(err, &le))
		})
	}
}

func withSize(d Descriptor, n int32) Descriptor   { d.SizeInBytes = n; return d }
func withCard(d Descriptor, n int64) Descriptor   { d.Cardinality = n; return d }
func withOffset(d Descriptor, n int32) Descriptor { d.Offset = n; return d }

func TestParseBitmapRejectsTopBitAndTrailingBytes(t *testing.T) {
	body, err := SerializeBitmap(roaring64.BitmapOf(7))
	require.NoError(t, err)
	_, err = ParseBitmap(append(body, 0))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = SerializeBitmap(roaring64.BitmapOf(1 << 63))
	require.ErrorIs(t, err, ErrInvalidRows)
}

func TestUniqueID(t *testing.T) {
	require.Equal(t, "uabc@1", Descriptor{StorageType: "u", PathOrInlineDv: "abc", Offset: 1}.UniqueID())
	require.Equal(t, "iXYZ", Descriptor{StorageType: "i", PathOrInlineDv: "XYZ"}.UniqueID())
}

func TestNilDeletedDeletesNothing(t *testing.T) {
	var d *Deleted
	require.False(t, d.Contains(0))
	require.Zero(t, d.Cardinality())
}

// TestCheckRows: a vector may delete only row positions below the file's row count
// (V5); an empty or nil vector fits any file.
func TestCheckRows(t *testing.T) {
	for _, c := range []struct {
		rows    []uint64
		numRows int64
		ok      bool
	}{
		{nil, 0, true},
		{[]uint64{0, 9}, 10, true},
		{[]uint64{10}, 10, false},
		{[]uint64{3, 1_000_000}, 10, false},
		{[]uint64{0}, -1, false},
	} {
		var d *Deleted
		if c.rows != nil {
			d = NewDeleted(roaring64.BitmapOf(c.rows...))
		}
		err := d.CheckRows(c.numRows)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidRows)) {
			t.Errorf("rows %v of a %d-row file: %v", c.rows, c.numRows, err)
		}
	}
}
