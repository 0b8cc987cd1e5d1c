package datafile

import (
	"io"
	"sync"
)

// asyncSink writes a Parquet file to its destination on a goroutine of its own.
// arrow-go holds a row group's pages in memory until the row group closes and then
// writes them in one go, during which the column encoders, which cannot start the
// next row group before the close returns, stand idle: 70 ms of one core for a
// 64 MiB row group on local disk, longer to object storage. asyncSink copies what is
// written into chunks that a goroutine hands to the destination in order, so the
// encoders go on meanwhile; at most maxQueued bytes wait (Write blocks beyond).
// Small writes (page index, footer) are gathered into one chunk.
//
// A failed write of the destination is returned by the next Write, flush or stop;
// nothing is written after it. Not safe for concurrent use (one writer goroutine).
type asyncSink struct {
	w      io.Writer
	chunks chan *[]byte
	cur    *[]byte // the chunk being filled (pooled by pointer: no allocation per Put)
	queued sync.WaitGroup
	done   chan struct{}
	mu     sync.Mutex
	err    error
	closed bool
}

// sinkChunk is the size of asyncSink's chunks.
const sinkChunk = 1 << 20

var sinkChunks = sync.Pool{New: func() any { c := make([]byte, 0, sinkChunk); return &c }}

// newAsyncSink starts the goroutine writing to w, with room for maxQueued bytes.
func newAsyncSink(w io.Writer, maxQueued int64) *asyncSink {
	s := &asyncSink{w: w, chunks: make(chan *[]byte, max(maxQueued/sinkChunk, 1)), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *asyncSink) run() {
	defer close(s.done)
	for c := range s.chunks {
		if s.failed() == nil {
			if _, err := s.w.Write(*c); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
		*c = (*c)[:0]
		sinkChunks.Put(c)
		s.queued.Done()
	}
}

func (s *asyncSink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Write queues a copy of p.
func (s *asyncSink) Write(p []byte) (int, error) {
	if err := s.failed(); err != nil {
		return 0, err
	}
	if s.closed {
		return 0, ErrClosed
	}
	n := len(p)
	for len(p) > 0 {
		if s.cur == nil {
			s.cur = sinkChunks.Get().(*[]byte)
		}
		c := *s.cur
		k := min(len(p), cap(c)-len(c))
		c = append(c, p[:k]...)
		*s.cur = c
		p = p[k:]
		if len(c) == cap(c) {
			s.send()
		}
	}
	return n, nil
}

// send queues the chunk being filled.
func (s *asyncSink) send() {
	if s.cur == nil || len(*s.cur) == 0 {
		return
	}
	s.queued.Add(1)
	s.chunks <- s.cur
	s.cur = nil
}

// flush waits until everything written so far has reached the destination.
func (s *asyncSink) flush() error {
	if !s.closed {
		s.send()
	}
	s.queued.Wait()
	return s.failed()
}

// stop flushes and ends the goroutine; the sink takes no more writes.
func (s *asyncSink) stop() error {
	if s.closed {
		return s.failed()
	}
	err := s.flush()
	s.closed = true
	close(s.chunks)
	<-s.done
	if s.cur != nil {
		*s.cur = (*s.cur)[:0]
		sinkChunks.Put(s.cur)
		s.cur = nil
	}
	return err
}
