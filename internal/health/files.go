package health

import (
	"fmt"
	"math"
)

// File is what the log records about one live file for the layout summary.
type File struct {
	// Size is the file size in bytes.
	Size int64
	// Clustered is true when the file was written clustered: it carries a
	// clusteringProvider or clustering-run (cube) tags.
	Clustered bool
	// ClusteredByCurrent is true when its clustering tags name the columns the report
	// is about (a clustered table's clustering columns).
	ClusteredByCurrent bool
	// Partition identifies the file's partition.
	Partition string
}

// Bucket is one bar of the file size histogram: files of at least Min and less than
// Max bytes (Max 0: no upper bound).
type Bucket struct {
	Min   int64 `json:"min"`
	Max   int64 `json:"max,omitempty"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Label renders the bucket's range ("256 KiB-1 MiB").
func (b Bucket) Label() string {
	if b.Max == 0 {
		return ">= " + FormatBytes(b.Min)
	}
	return FormatBytes(b.Min) + "-" + FormatBytes(b.Max)
}

// Summary is the file-level part of a layout report.
type Summary struct {
	// Files and Bytes count the live files; Partitions their distinct partitions.
	Files      int   `json:"files"`
	Bytes      int64 `json:"bytes"`
	Partitions int   `json:"partitions"`
	// Histogram counts files by size in buckets growing by 4x from 64 KiB.
	Histogram []Bucket `json:"histogram"`
	// SmallFileSize is the threshold below which a file counts as small (what
	// compaction would rewrite); SmallFiles and SmallBytes count those files.
	SmallFileSize int64 `json:"smallFileSize"`
	SmallFiles    int   `json:"smallFiles"`
	SmallBytes    int64 `json:"smallBytes"`
	// ClusteredBytes counts the bytes of clustered files and ClusteredFraction is
	// their share of Bytes; ClusteredByCurrentFraction counts only files clustered
	// by the table's current clustering columns.
	ClusteredBytes             int64   `json:"clusteredBytes"`
	ClusteredFraction          float64 `json:"clusteredFraction"`
	ClusteredByCurrentFraction float64 `json:"clusteredByCurrentFraction"`
}

// histogramBounds are the lower bounds of the histogram buckets.
var histogramBounds = []int64{0, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30}

// Summarize counts files, sizes, small files and clustered bytes.
func Summarize(files []File, smallFileSize int64) Summary {
	s := Summary{SmallFileSize: smallFileSize}
	for i, lo := range histogramBounds {
		b := Bucket{Min: lo}
		if i+1 < len(histogramBounds) {
			b.Max = histogramBounds[i+1]
		}
		s.Histogram = append(s.Histogram, b)
	}
	parts := map[string]bool{}
	var current int64
	for _, f := range files {
		s.Files++
		s.Bytes += f.Size
		parts[f.Partition] = true
		i := len(histogramBounds) - 1
		for i > 0 && f.Size < histogramBounds[i] {
			i--
		}
		s.Histogram[i].Files++
		s.Histogram[i].Bytes += f.Size
		if f.Size < smallFileSize {
			s.SmallFiles++
			s.SmallBytes += f.Size
		}
		if f.Clustered {
			s.ClusteredBytes += f.Size
		}
		if f.ClusteredByCurrent {
			current += f.Size
		}
	}
	s.Partitions = len(parts)
	if s.Bytes > 0 {
		s.ClusteredFraction = float64(s.ClusteredBytes) / float64(s.Bytes)
		s.ClusteredByCurrentFraction = float64(current) / float64(s.Bytes)
	}
	return s
}

// WriteAmplification is how many bytes the table's history wrote per byte of data
// it took in.
type WriteAmplification struct {
	// FromVersion and ToVersion delimit the commits counted (those still in the log).
	FromVersion int64 `json:"fromVersion"`
	ToVersion   int64 `json:"toVersion"`
	// DataBytes counts the bytes of files added with dataChange=true (appends,
	// overwrites, DML rewrites); RearrangedBytes those added with dataChange=false
	// (OPTIMIZE, compaction, backfills).
	DataBytes       int64 `json:"dataBytes"`
	RearrangedBytes int64 `json:"rearrangedBytes"`
	// Ratio is (DataBytes + RearrangedBytes) / DataBytes: 1 when nothing was ever
	// rewritten (0 when no data was written).
	Ratio float64 `json:"ratio"`
}

// NewWriteAmplification computes the ratio.
func NewWriteAmplification(from, to, data, rearranged int64) WriteAmplification {
	w := WriteAmplification{FromVersion: from, ToVersion: to, DataBytes: data, RearrangedBytes: rearranged}
	if data > 0 {
		w.Ratio = float64(data+rearranged) / float64(data)
	}
	return w
}

// FormatBytes renders a byte count with a binary unit ("1.5 MiB").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f := float64(n)
	i := 0
	for math.Abs(f) >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f %s", f, units[i])
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
