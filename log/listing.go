package log

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/skiplake/skiplake/storage"
)

const (
	logDir            = "_delta_log/"
	sidecarDir        = "_delta_log/_sidecars/"
	lastCheckpointKey = "_delta_log/_last_checkpoint"
)

// CommitPath returns the path of commit file version, relative to the table root.
func CommitPath(version int64) string { return fmt.Sprintf("%s%020d.json", logDir, version) }

// CheckpointPath returns the path of the classic single-file checkpoint of version.
func CheckpointPath(version int64) string {
	return fmt.Sprintf("%s%020d.checkpoint.parquet", logDir, version)
}

type cpKind int

const (
	cpClassic cpKind = iota
	cpMultiPart
	cpV2JSON
	cpV2Parquet
)

// checkpointSet is one complete checkpoint: a classic file, all parts of a
// multi-part checkpoint, or one v2 manifest.
type checkpointSet struct {
	version int64
	kind    cpKind
	files   []storage.ObjectInfo
}

// listing is what one List of _delta_log/ found.
type listing struct {
	commits     map[int64]storage.ObjectInfo
	checkpoints []checkpointSet // ascending version, complete sets only
	maxVersion  int64           // -1 when empty
}

// parseVersionPrefix parses the leading 20-digit version of a log file name.
func parseVersionPrefix(name string) (int64, string, bool) {
	if len(name) < 21 || name[20] != '.' {
		return 0, "", false
	}
	for i := 0; i < 20; i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, "", false
		}
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return v, name[21:], true
}

// list lists _delta_log/ (direct children only) after startAfter.
func (l *Log) list(ctx context.Context, startAfter string) (*listing, error) {
	objs, err := l.store.List(ctx, logDir, startAfter)
	if err != nil {
		return nil, fmt.Errorf("log: listing %s: %w", logDir, err)
	}
	out := &listing{commits: map[int64]storage.ObjectInfo{}, maxVersion: -1}
	type partKey struct {
		version int64
		n       int
	}
	multi := map[partKey]map[int]storage.ObjectInfo{}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Path, logDir)
		if strings.Contains(name, "/") {
			continue // _sidecars/ and other subdirectories
		}
		v, rest, ok := parseVersionPrefix(name)
		if !ok {
			continue
		}
		switch {
		case rest == "json":
			out.commits[v] = o
		case rest == "checkpoint.parquet":
			out.checkpoints = append(out.checkpoints, checkpointSet{version: v, kind: cpClassic, files: []storage.ObjectInfo{o}})
		case strings.HasPrefix(rest, "checkpoint."):
			mid := strings.TrimPrefix(rest, "checkpoint.")
			parts := strings.Split(mid, ".")
			if len(parts) == 3 && parts[2] == "parquet" && len(parts[0]) == 10 && len(parts[1]) == 10 {
				p, err1 := strconv.Atoi(parts[0])
				n, err2 := strconv.Atoi(parts[1])
				if err1 == nil && err2 == nil && p >= 1 && p <= n {
					k := partKey{v, n}
					if multi[k] == nil {
						multi[k] = map[int]storage.ObjectInfo{}
					}
					multi[k][p] = o
				}
				continue
			}
			if len(parts) == 2 && (parts[1] == "json" || parts[1] == "parquet") && parts[0] != "" {
				kind := cpV2JSON
				if parts[1] == "parquet" {
					kind = cpV2Parquet
				}
				out.checkpoints = append(out.checkpoints, checkpointSet{version: v, kind: kind, files: []storage.ObjectInfo{o}})
			}
		default:
			continue // .crc, .compacted.json and unknown files are ignored
		}
		if v > out.maxVersion {
			out.maxVersion = v
		}
	}
	for k, parts := range multi {
		if len(parts) != k.n {
			continue // incomplete multi-part set: ignored
		}
		set := checkpointSet{version: k.version, kind: cpMultiPart}
		for p := 1; p <= k.n; p++ {
			set.files = append(set.files, parts[p])
		}
		out.checkpoints = append(out.checkpoints, set)
		if k.version > out.maxVersion {
			out.maxVersion = k.version
		}
	}
	sort.SliceStable(out.checkpoints, func(i, j int) bool {
		a, b := out.checkpoints[i], out.checkpoints[j]
		if a.version != b.version {
			return a.version < b.version
		}
		return a.kind < b.kind
	})
	return out, nil
}

func sortStrings(s []string) { sort.Strings(s) }
