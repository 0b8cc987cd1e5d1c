package dv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// seqUUIDs returns reproducible file ids 00000000-0000-0000-0000-00000000000N.
func seqUUIDs() func() uuid.UUID {
	var n atomic.Uint32
	return func() uuid.UUID {
		var id uuid.UUID
		v := n.Add(1)
		id[15], id[14] = byte(v), byte(v>>8)
		return id
	}
}

// loadBoth loads d with Load (whole object) and LoadRange (ranged reads) and checks
// they agree.
func loadBoth(t *testing.T, st storage.Storage, d *log.DeletionVectorDescriptor) *roaring64.Bitmap {
	t.Helper()
	a, err := Load(t.Context(), st.Get, "", FromLog(d))
	require.NoError(t, err)
	b, err := LoadRange(t.Context(), st.Open, "", FromLog(d))
	require.NoError(t, err)
	require.True(t, a.Bitmap().Equals(b.Bitmap()))
	return a.Bitmap()
}

func objects(t *testing.T, st storage.Storage) []string {
	t.Helper()
	infos, err := st.List(context.Background(), "", "")
	require.NoError(t, err)
	var out []string
	for _, o := range infos {
		out = append(out, o.Path)
	}
	return out
}

func TestWriteManyVectorsIntoOneFile(t *testing.T) {
	st := storage.NewMemory()
	in := []*roaring64.Bitmap{roaring64.BitmapOf(0, 9), roaring64.BitmapOf(3), roaring64.New()}
	in[2].AddRange(100, 5000)
	want := []*roaring64.Bitmap{in[0].Clone(), in[1].Clone(), in[2].Clone()}
	w, err := Write(t.Context(), st, in, WriteOptions{NewUUID: seqUUIDs()})
	require.NoError(t, err)
	require.Equal(t, []string{"deletion_vector_00000000-0000-0000-0000-000000000001.bin"}, w.Files)
	require.Equal(t, w.Files, objects(t, st))
	data, err := st.Get(t.Context(), w.Files[0])
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), w.Bytes)
	off := int32(1)
	for i, d := range w.Descriptors {
		require.Equal(t, "u", d.StorageType)
		require.Equal(t, off, *d.Offset, "vector %d", i)
		require.Equal(t, int64(want[i].GetCardinality()), d.Cardinality)
		require.Nil(t, d.MaxRowIndex)
		require.True(t, want[i].Equals(loadBoth(t, st, d)), "vector %d", i)
		off += 4 + d.SizeInBytes + 4
	}
	require.Equal(t, int64(off), w.Bytes, "vectors are contiguous and fill the file")
	// The same bytes as FileWriter on its own.
	file, d0, err := EncodeFile(want[0].Clone(), uuid.MustParse("00000000-0000-0000-0000-000000000001"), "")
	require.NoError(t, err)
	require.Equal(t, d0.ToLog(), w.Descriptors[0])
	require.Equal(t, file, data[:len(file)])
}

func TestWritePacksVectorsUpToTheTargetSize(t *testing.T) {
	st := storage.NewMemory()
	r := rand.New(rand.NewPCG(3, 4))
	var in, want []*roaring64.Bitmap
	for range 30 {
		bm := roaring64.New()
		for range 1 + r.IntN(200) {
			bm.Add(r.Uint64N(1 << 22))
		}
		in, want = append(in, bm), append(want, bm.Clone())
	}
	const target = 1500
	w, err := Write(t.Context(), st, in, WriteOptions{TargetFileSize: target})
	require.NoError(t, err)
	require.Greater(t, len(w.Files), 2)
	require.ElementsMatch(t, w.Files, objects(t, st))
	var total int64
	for _, f := range w.Files {
		info, err := st.Stat(t.Context(), f)
		require.NoError(t, err)
		total += info.Size
		vectors := 0
		for _, d := range w.Descriptors {
			if p, _ := FromLog(d).RelativePath(""); p == f {
				vectors++
			}
		}
		require.True(t, info.Size <= target || vectors == 1, "%s: %d bytes with %d vectors", f, info.Size, vectors)
	}
	require.Equal(t, total, w.Bytes)
	for i, d := range w.Descriptors {
		require.True(t, want[i].Equals(loadBoth(t, st, d)), "vector %d", i)
	}

	st2 := storage.NewMemory()
	w, err = Write(t.Context(), st2, cloneAll(want), WriteOptions{TargetFileSize: -1})
	require.NoError(t, err)
	require.Len(t, w.Files, 1, "negative target: one file")
}

func cloneAll(bms []*roaring64.Bitmap) []*roaring64.Bitmap {
	out := make([]*roaring64.Bitmap, len(bms))
	for i, b := range bms {
		out[i] = b.Clone()
	}
	return out
}

func TestWriteInlinesSmallVectorsOnlyWhenAsked(t *testing.T) {
	big := roaring64.New()
	for i := uint64(0); i < 3000; i += 2 {
		big.Add(i)
	}
	in := []*roaring64.Bitmap{roaring64.BitmapOf(5), big, roaring64.BitmapOf(1, 2, 3)}
	want := cloneAll(in)

	st := storage.NewMemory()
	w, err := Write(t.Context(), st, cloneAll(in), WriteOptions{})
	require.NoError(t, err)
	for _, d := range w.Descriptors {
		require.Equal(t, "u", d.StorageType, "the default never inlines (Spark never does)")
	}

	st = storage.NewMemory()
	w, err = Write(t.Context(), st, in, WriteOptions{InlineMaxBytes: 64})
	require.NoError(t, err)
	require.Equal(t, []string{"i", "u", "i"}, []string{w.Descriptors[0].StorageType, w.Descriptors[1].StorageType, w.Descriptors[2].StorageType})
	require.Nil(t, w.Descriptors[0].Offset, "inline descriptors have no offset")
	require.Equal(t, int32(1), *w.Descriptors[1].Offset)
	require.Len(t, w.Files, 1)
	for i, d := range w.Descriptors {
		require.True(t, want[i].Equals(loadBoth(t, st, d)), "vector %d", i)
	}

	st = storage.NewMemory()
	w, err = Write(t.Context(), st, []*roaring64.Bitmap{roaring64.BitmapOf(7)}, WriteOptions{InlineMaxBytes: 64})
	require.NoError(t, err)
	require.Empty(t, w.Files)
	require.Empty(t, objects(t, st), "all inline: no file")
}

func TestWriteRandomPrefix(t *testing.T) {
	st := storage.NewMemory()
	w, err := Write(t.Context(), st, []*roaring64.Bitmap{roaring64.BitmapOf(1), roaring64.BitmapOf(2)}, WriteOptions{RandomPrefixLength: 3})
	require.NoError(t, err)
	require.Len(t, w.Files, 1)
	prefix, name, ok := strings.Cut(w.Files[0], "/")
	require.True(t, ok, w.Files[0])
	require.Len(t, prefix, 3)
	require.True(t, strings.HasPrefix(name, "deletion_vector_"))
	for _, d := range w.Descriptors {
		require.Len(t, d.PathOrInlineDv, 23)
		require.Equal(t, prefix, d.PathOrInlineDv[:3])
		loadBoth(t, st, d)
	}
}

func TestWriteRefusesBadInputBeforeWritingAnything(t *testing.T) {
	cases := []struct {
		name string
		in   []*roaring64.Bitmap
		opts WriteOptions
		want error
	}{
		{"empty bitmap", []*roaring64.Bitmap{roaring64.BitmapOf(1), roaring64.New()}, WriteOptions{}, ErrEmptyVector},
		{"nil bitmap", []*roaring64.Bitmap{roaring64.BitmapOf(1), nil}, WriteOptions{}, ErrEmptyVector},
		{"top bit set", []*roaring64.Bitmap{roaring64.BitmapOf(1), roaring64.BitmapOf(1 << 63)}, WriteOptions{}, ErrInvalidRows},
		{"negative inline size", []*roaring64.Bitmap{roaring64.BitmapOf(1)}, WriteOptions{InlineMaxBytes: -1}, ErrInvalidDescriptor},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := storage.NewMemory()
			_, err := Write(t.Context(), st, c.in, c.opts)
			require.ErrorIs(t, err, c.want)
			require.Empty(t, objects(t, st))
		})
	}
}

// hiddenCreator is a Storage without the Creator capability: Write falls back to
// buffering and PutIfAbsent.
type hiddenCreator struct{ storage.Storage }

// failingStore fails or cancels on the n-th publish.
type failingStore struct {
	storage.Storage
	puts   atomic.Int32
	failAt int32
	cancel context.CancelFunc
}

var errInjected = errors.New("injected storage failure")

func (f *failingStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if f.puts.Add(1) == f.failAt {
		if f.cancel != nil {
			f.cancel()
			return ctx.Err()
		}
		return errInjected
	}
	return f.Storage.PutIfAbsent(ctx, p, data)
}

func TestWriteWithoutStreamingCapability(t *testing.T) {
	mem := storage.NewMemory()
	st := hiddenCreator{mem}
	_, isCreator := storage.Storage(st).(storage.Creator)
	require.False(t, isCreator)
	in := []*roaring64.Bitmap{roaring64.BitmapOf(1, 2), roaring64.BitmapOf(9)}
	want := cloneAll(in)
	w, err := Write(t.Context(), st, in, WriteOptions{})
	require.NoError(t, err)
	for i, d := range w.Descriptors {
		require.True(t, want[i].Equals(loadBoth(t, mem, d)))
	}
}

func TestWriteFailureLeavesNoFileBehind(t *testing.T) {
	mk := func() []*roaring64.Bitmap {
		var out []*roaring64.Bitmap
		for i := range 10 {
			bm := roaring64.New()
			bm.AddRange(uint64(i*1000), uint64(i*1000+700))
			bm.Add(uint64(i*1000 + 900))
			out = append(out, bm)
		}
		return out
	}
	t.Run("storage error on the third file", func(t *testing.T) {
		mem := storage.NewMemory()
		st := &failingStore{Storage: mem, failAt: 3}
		_, err := Write(t.Context(), hiddenCreator{st}, mk(), WriteOptions{TargetFileSize: 80})
		require.ErrorIs(t, err, errInjected)
		require.Equal(t, int32(3), st.puts.Load())
		require.Empty(t, objects(t, mem), "files published before the failure are removed")
	})
	t.Run("context cancelled while writing", func(t *testing.T) {
		mem := storage.NewMemory()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st := &failingStore{Storage: mem, failAt: 2, cancel: cancel}
		_, err := Write(ctx, hiddenCreator{st}, mk(), WriteOptions{TargetFileSize: 80})
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, objects(t, mem))
	})
	t.Run("context cancelled before", func(t *testing.T) {
		mem := storage.NewMemory()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Write(ctx, mem, mk(), WriteOptions{})
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, objects(t, mem))
	})
}

func TestWriteRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 25 {
		st := storage.NewMemory()
		var in []*roaring64.Bitmap
		for range 1 + r.IntN(8) {
			bm := randomBitmap(r)
			if bm.IsEmpty() {
				bm.Add(r.Uint64N(1 << 30))
			}
			in = append(in, bm)
		}
		want := cloneAll(in)
		opts := WriteOptions{TargetFileSize: []int64{0, -1, 200, 5000}[r.IntN(4)], InlineMaxBytes: []int{0, 0, 60}[r.IntN(3)]}
		w, err := Write(t.Context(), st, in, opts)
		require.NoError(t, err, "round %d", round)
		for i, d := range w.Descriptors {
			require.True(t, want[i].Equals(loadBoth(t, st, d)), "round %d vector %d", round, i)
		}
	}
}

func TestUnionOnlyGrows(t *testing.T) {
	old := NewDeleted(roaring64.BitmapOf(1, 5, 9))
	add := roaring64.BitmapOf(5, 6, 7)
	merged, n, err := Union(old, add, 10)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 5, 6, 7, 9}, merged.ToArray())
	require.Equal(t, uint64(2), n, "5 was already deleted")
	require.Equal(t, []uint64{1, 5, 9}, old.Bitmap().ToArray(), "old is not modified")
	require.Equal(t, []uint64{5, 6, 7}, add.ToArray(), "add is not modified")

	merged, n, err = Union(nil, roaring64.BitmapOf(0, 3), 4)
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 3}, merged.ToArray())
	require.Equal(t, uint64(2), n)

	merged, n, err = Union(old, nil, 10)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 5, 9}, merged.ToArray())
	require.Zero(t, n)

	_, _, err = Union(old, roaring64.BitmapOf(10), 10)
	require.ErrorIs(t, err, ErrInvalidRows, "row 10 of a 10-row file")
	_, _, err = Union(old, roaring64.BitmapOf(2), 9)
	require.ErrorIs(t, err, ErrInvalidRows, "the old vector deletes row 9 of a 9-row file")
	_, _, err = Union(nil, nil, -1)
	require.ErrorIs(t, err, ErrInvalidRows)

	// Property: the union contains old and add, and nothing else.
	r := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		o, a := randomBitmap(r), randomBitmap(r)
		var max uint64
		for _, b := range []*roaring64.Bitmap{o, a} {
			if !b.IsEmpty() && b.Maximum() > max {
				max = b.Maximum()
			}
		}
		m, n, err := Union(NewDeleted(o), a, int64(max)+1)
		require.NoError(t, err)
		require.True(t, roaring64.Or(o, a).Equals(m))
		require.Equal(t, roaring64.AndNot(a, o).GetCardinality(), n)
	}
}

func TestDescriptorConversions(t *testing.T) {
	id := uuid.MustParse("d2c639aa-8816-431a-aaf6-d3fe2512ff61")
	d, err := UUIDDescriptor(id, "ab", 4, 40, 6)
	require.NoError(t, err)
	// PROTOCOL.md "JSON Example 1".
	require.Equal(t, Descriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: 4, SizeInBytes: 40, Cardinality: 6}, d)
	rel, err := d.RelativePath("")
	require.NoError(t, err)
	require.Equal(t, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", rel)

	ld := d.ToLog()
	require.Equal(t, int32(4), *ld.Offset)
	require.Equal(t, d, FromLog(ld))
	require.Equal(t, ld.UniqueID(), d.UniqueID())
	inl := Descriptor{StorageType: "i", PathOrInlineDv: "abcde", SizeInBytes: 3, Cardinality: 1}
	require.Nil(t, inl.ToLog().Offset)
	require.Equal(t, inl, FromLog(inl.ToLog()))
	require.Equal(t, Descriptor{}, FromLog(nil))

	for _, root := range []string{"s3://mytable", "s3://bucket/my table", "file:///data/t", "/data/t"} {
		p, err := d.Absolute(root)
		require.NoError(t, err, root)
		require.Equal(t, "p", p.StorageType)
		back, err := p.RelativePath(root)
		require.NoError(t, err, "%s -> %s", root, p.PathOrInlineDv)
		require.Equal(t, rel, back)
	}
	p, err := d.Absolute("s3://mytable")
	require.NoError(t, err)
	require.Equal(t, "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", p.PathOrInlineDv)
	_, err = d.Absolute("relative/root")
	require.ErrorIs(t, err, ErrInvalidDescriptor)
	_, err = inl.Absolute("s3://x")
	require.ErrorIs(t, err, ErrInvalidDescriptor)

	for _, bad := range []struct {
		prefix          string
		off, size       int32
		card            int64
		wantErrContains string
	}{
		{"/abs", 1, 40, 1, "prefix"}, {"a/../b", 1, 40, 1, "prefix"}, {"", 0, 40, 1, "offset"}, {"", 1, 40, 0, "cardinality"},
	} {
		_, err := UUIDDescriptor(id, bad.prefix, bad.off, bad.size, bad.card)
		require.ErrorIs(t, err, ErrInvalidDescriptor, fmt.Sprint(bad))
		require.Contains(t, err.Error(), bad.wantErrContains)
	}
}
