package datafile

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// failAfter accepts limit bytes, then fails every write.
type failAfter struct {
	buf   bytes.Buffer
	limit int
	calls int
}

var errSinkFull = errors.New("sink full")

func (f *failAfter) Write(p []byte) (int, error) {
	f.calls++
	if f.buf.Len()+len(p) > f.limit {
		return 0, errSinkFull
	}
	return f.buf.Write(p)
}

// asyncSink delivers exactly the bytes written, in order, whatever the write sizes
// (checked against a plain buffer); after flush they are all in the destination.
func TestAsyncSinkDeliversInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	fill := rand.NewChaCha8([32]byte{8, 9})
	rounds := 20
	if raceEnabled {
		rounds = 4
	}
	for round := 0; round < rounds; round++ {
		var want, got bytes.Buffer
		s := newAsyncSink(&got, int64(rng.IntN(4<<20)))
		for i := 0; i < 60; i++ {
			n := rng.IntN(3 << 20)
			if rng.IntN(3) > 0 {
				n = rng.IntN(200)
			}
			p := make([]byte, n)
			_, _ = fill.Read(p)
			want.Write(p)
			m, err := s.Write(p)
			require.NoError(t, err)
			require.Equal(t, n, m)
			clear(p) // the sink must have copied it
			if rng.IntN(10) == 0 {
				require.NoError(t, s.flush())
				require.True(t, bytes.Equal(want.Bytes(), got.Bytes()), "after flush")
			}
		}
		require.NoError(t, s.stop())
		require.True(t, bytes.Equal(want.Bytes(), got.Bytes()))
		_, err := s.Write([]byte("x"))
		require.ErrorIs(t, err, ErrClosed)
	}
}

// A failed write of the destination is returned (by a later Write, flush or stop)
// and nothing is written after it.
func TestAsyncSinkReportsFailure(t *testing.T) {
	dst := &failAfter{limit: 3 << 20}
	s := newAsyncSink(dst, 8<<20)
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = s.Write(make([]byte, 1<<20))
		if err == nil {
			err = s.flush()
		}
	}
	require.ErrorIs(t, err, errSinkFull)
	calls := dst.calls
	_, err = s.Write(make([]byte, 10))
	require.ErrorIs(t, err, errSinkFull)
	require.ErrorIs(t, s.stop(), errSinkFull)
	require.Equal(t, calls, dst.calls, "written after the failure")
	require.Equal(t, 3<<20, dst.buf.Len())

	// Chunks queued behind the failed one are dropped, not written.
	dst = &failAfter{limit: 3 << 19}
	s = newAsyncSink(dst, 8<<20)
	for i := 0; i < 5; i++ {
		if _, err := s.Write(make([]byte, 1<<20)); err != nil {
			break
		}
	}
	require.ErrorIs(t, s.stop(), errSinkFull)
	require.Equal(t, 2, dst.calls, "destination writes: one that fits, one that fails")
}

// A Writer whose destination fails reports it at Close, not before the data is
// handed over, and returns no result.
func TestWriterReportsSinkFailureAtClose(t *testing.T) {
	mem := checkedMem(t)
	rec := flatBatch(t, mem, 5000, 1)
	defer rec.Release()
	dst := &failAfter{limit: 100}
	w, err := NewWriter(dst, rec.Schema(), WriterOptions{Allocator: mem})
	require.NoError(t, err)
	_ = w.Write(rec)
	res, err := w.Close()
	require.ErrorIs(t, err, errSinkFull)
	require.Nil(t, res)
}
