package tableview

import (
	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/log"
)

// IsClustered reports whether a was written clustered: it carries a
// clusteringProvider (Delta liquid clustering), the cube tag of a Z-order,
// Hilbert or linear clustering run (log.TagZCubeID), or a workload tree's tag
// (layout.TreeTag). Such a file's size and row order were chosen by the run that
// wrote it: plain compaction never merges it with others (that would undo its
// clustering), a rewrite that keeps its rows in order keeps its tags, and the
// small-file rule (IsSmallFile) does not count it.
func IsClustered(a *log.Add) bool {
	return a.ClusteringProvider != "" || a.Tags[log.TagZCubeID] != "" || a.Tags[layout.TreeTag] != ""
}
