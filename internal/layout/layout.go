// Package layout knows the names in a table's directory tree: which paths VACUUM may
// ever consider (not the log, not hidden, but the workload layout's tree files), and
// which names skiplake's own writers give the files they create. Table creation and VACUUM share these rules, so a location
// that Create accepts as empty holds nothing VACUUM would delete but skiplake's own
// leftovers.
//
// Invariant: WrittenBySkiplake(p) is true for every data file and Bloom index file the
// table and optimize packages write (tested there, against files they really wrote),
// for every tree file of the workload layout (IsTreeFile), and for nothing a user or another engine is likely to name that way.
package layout

import (
	"strings"

	"github.com/google/uuid"
)

// LogDir is the directory of the Delta log, relative to the table root.
const LogDir = "_delta_log/"

// IndexDir is the one hidden directory VACUUM looks into: Bloom index files live
// there (bloom.IndexDir's parent) and are garbage once nothing references them.
const IndexDir = "_delta_index/"

// ChangeDataDir is the directory of the change data files (PROTOCOL.md "Change Data
// Files"): commits of DELETE, UPDATE and MERGE on a table with the change data feed
// on reference them with cdc actions; partitioned tables put them in partition
// directories under it. Change readers need them only for the versions they read,
// so VACUUM deletes them like removed data files (as Delta Spark does): once they
// are older than the retention and no commit inside the window references them.
const ChangeDataDir = "_change_data/"

// TreeDir is the directory of the workload layout's tree files (package optimize,
// CurveWorkload): side files that the add.tags of the files laid out by a tree name
// under TreeTag. VACUUM considers the tree files in it (IsTreeFile) and nothing else
// there.
const TreeDir = "_skiplake_layout/"

// TreeTag is the add.tags key whose value is the path (relative to the table root)
// of the tree file that laid the file out (optimize.TagTree).
const TreeTag = "skiplake.qdtree"

// TreeFile returns the path of the tree file with the given UUID:
// "_skiplake_layout/qdtree-<uuid>.json".
func TreeFile(id uuid.UUID) string { return TreeDir + "qdtree-" + id.String() + ".json" }

// IsTreeFile reports whether p (relative to the table root) is the path of a tree file
// as TreeFile names them.
func IsTreeFile(p string) bool {
	rest, ok := strings.CutPrefix(p, TreeDir+"qdtree-")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, ".json")
	return ok && isUUID(id)
}

// Vacuumable reports whether VACUUM may ever delete the file at p (relative to the
// table root): not in the log and not hidden. A path is hidden when one of its
// elements starts with '_' or '.', except partition directories ("_col=1"),
// _delta_index/, _change_data/ and the tree files of TreeDir (only those: anything
// else under TreeDir is hidden).
func Vacuumable(p string) bool {
	if strings.HasPrefix(p, LogDir) || p == strings.TrimSuffix(LogDir, "/") {
		return false
	}
	if strings.HasPrefix(p, TreeDir) {
		return IsTreeFile(p)
	}
	for _, dir := range []string{IndexDir, ChangeDataDir} {
		if rest, ok := strings.CutPrefix(p, dir); ok {
			return rest != "" && !hidden(rest)
		}
	}
	return !hidden(p)
}

// IsChangeDataFile reports whether p (relative to the table root) lies under
// ChangeDataDir.
func IsChangeDataFile(p string) bool { return strings.HasPrefix(p, ChangeDataDir) }

func hidden(p string) bool {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if c == "" || c == ".." {
			return true
		}
		if c[0] != '_' && c[0] != '.' {
			continue
		}
		if i < len(parts)-1 && strings.Contains(c, "=") {
			continue // partition directory such as _col=1
		}
		return true
	}
	return false
}

// WrittenBySkiplake reports whether p (relative to the table root) has the name of a
// file skiplake's writers create: a data file "part-NNNNN-<uuid>.c000.zstd.parquet"
// (at the root or in partition directories), a change data file
// "_change_data/[partition directories/]cdc-NNNNN-<uuid>.c000.zstd.parquet", a Bloom
// index file "_delta_index/bloom/<uuid>.bin" or a tree file (IsTreeFile).
func WrittenBySkiplake(p string) bool {
	if IsTreeFile(p) {
		return true
	}
	if rest, ok := strings.CutPrefix(p, IndexDir+"bloom/"); ok {
		id, ok := strings.CutSuffix(rest, ".bin")
		return ok && isUUID(id)
	}
	name := p[strings.LastIndexByte(p, '/')+1:]
	if IsChangeDataFile(p) {
		return isWrittenName(name, "cdc-")
	}
	return IsDataFileName(name)
}

// IsDataFileName reports whether name (one path element) is a data file name of
// skiplake's writers: "part-" five digits "-" a UUID ".c000.zstd.parquet".
func IsDataFileName(name string) bool { return isWrittenName(name, "part-") }

// isWrittenName reports whether name is prefix, five digits, "-", a UUID and
// ".c000.zstd.parquet".
func isWrittenName(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || len(rest) < 6 || rest[5] != '-' {
		return false
	}
	for _, c := range []byte(rest[:5]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	id, ok := strings.CutSuffix(rest[6:], ".c000.zstd.parquet")
	return ok && isUUID(id)
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}
