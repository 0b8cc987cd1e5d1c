package render

import "github.com/skiplake/skiplake/internal/health"

// FormatBytes prints a byte count in binary units as the CLI's reports label sizes
// ("512 B", "1 MiB", "1.5 GiB"): the labels of the layout and maintain reports, which
// package health computes (health.FormatBytes).
func FormatBytes(n int64) string { return health.FormatBytes(n) }
