//go:build !linux

package log

// adviseHugePages does nothing where transparent huge pages are not requested by
// madvise.
func adviseHugePages([]byte) {}
