package log

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page (x86-64 and arm64 with 4 KiB
// base pages; with other sizes the advice covers fewer or no pages, harmlessly).
const hugePage = 2 << 20

// adviseHugePages advises MADV_HUGEPAGE for the whole huge pages inside b (nothing
// for a slice spanning fewer than two). The advice is a hint: an error (a kernel
// without transparent huge pages) is ignored, and the memory stays as it was.
func adviseHugePages(b []byte) {
	if len(b) < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + uintptr(len(b))) &^ (hugePage - 1)
	if beg >= end {
		return
	}
	_ = syscall.Madvise(b[beg-p:end-p], syscall.MADV_HUGEPAGE)
}
