package log

import "unsafe"

// Large decode buffers and the actions' memory are first touched once, by the
// decode. On Linux most of that cost is page faults, one per 4 KiB page, which on a
// virtual machine cost more than writing the memory; hugeMake asks for the large
// slices to be backed by transparent huge pages (one fault per 2 MiB) where the
// kernel offers them on request (madvise mode, the common default). Elsewhere, and
// where the kernel declines, it is make.

// hugeMake is make([]T, n), the whole huge pages inside it advised as such before
// anything touches them. Only the memory's backing changes: its contents are those
// of make, and the garbage collector manages it as any slice.
func hugeMake[T any](n int) []T {
	s := make([]T, n)
	if n > 0 {
		var z T
		adviseHugePages(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(n)*unsafe.Sizeof(z)))
	}
	return s
}
