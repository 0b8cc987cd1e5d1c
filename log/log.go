package log

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skiplake/skiplake/storage"
)

// Log is a table's transaction log. It is safe for concurrent use.
type Log struct {
	store storage.Storage
	// now is the clock used for commit timestamps and tombstone expiry.
	now func() time.Time
	// warnings holds the ObserveWarnings observers (shared by WithClock's copies).
	warnings *warningHook
}

// New returns the log of the table rooted at store (the log lives under _delta_log/).
func New(store storage.Storage) *Log {
	return &Log{store: store, now: time.Now, warnings: &warningHook{}}
}

// Storage returns the store the log was created with.
func (l *Log) Storage() storage.Storage { return l.store }

// LastCheckpoint is the content of _delta_log/_last_checkpoint.
type LastCheckpoint struct {
	// Version is the checkpoint's table version.
	Version int64 `json:"version"`
	// Size is the number of actions in the checkpoint.
	Size int64 `json:"size"`
	// Parts is the number of parts of a multi-part checkpoint.
	Parts *int `json:"parts,omitempty"`
	// SizeInBytes is the checkpoint's total size in bytes.
	SizeInBytes *int64 `json:"sizeInBytes,omitempty"`
	// NumOfAddFiles is the number of add actions in the checkpoint.
	NumOfAddFiles *int64 `json:"numOfAddFiles,omitempty"`
}

// readLastCheckpoint returns the _last_checkpoint hint, or -1 when it is
// missing, empty or corrupt (L3: a bad hint only costs a listing).
func (l *Log) readLastCheckpoint(ctx context.Context) int64 {
	data, err := l.store.Get(ctx, lastCheckpointKey)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return -1
	}
	var lc LastCheckpoint
	if err := json.Unmarshal(data, &lc); err != nil || lc.Version < 0 {
		return -1
	}
	return lc.Version
}

// LatestVersion returns the newest version of the table (a commit or a
// checkpoint). It returns ErrTableNotFound for an empty log.
func (l *Log) LatestVersion(ctx context.Context) (int64, error) {
	start := ""
	if h := l.readLastCheckpoint(ctx); h >= 0 {
		start = fmt.Sprintf("%s%020d", logDir, h)
	}
	lst, err := l.list(ctx, start)
	if err != nil {
		return 0, err
	}
	if lst.maxVersion < 0 && start != "" {
		if lst, err = l.list(ctx, ""); err != nil {
			return 0, err
		}
	}
	if lst.maxVersion < 0 {
		return 0, ErrTableNotFound
	}
	return lst.maxVersion, nil
}

// Snapshot returns the table state at version (version < 0: the latest).
// It starts from the newest complete checkpoint at or below the version,
// replays the later commits (L1, L3) and checks the reader protocol (L4).
func (l *Log) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	if h := l.readLastCheckpoint(ctx); h >= 0 && (version < 0 || h <= version) {
		lst, err := l.list(ctx, fmt.Sprintf("%s%020d", logDir, h))
		if err != nil {
			return nil, err
		}
		if snap, err := l.build(ctx, lst, version, false); err == nil {
			return snap, nil
		}
		// The hint was stale or its checkpoint unreadable: fall back to a full listing.
	}
	lst, err := l.list(ctx, "")
	if err != nil {
		return nil, err
	}
	return l.build(ctx, lst, version, true)
}

// build reconstructs the snapshot at version from a listing. complete says
// whether the listing starts at the beginning of the log (so a JSON replay
// from version 0 may be attempted).
func (l *Log) build(ctx context.Context, lst *listing, version int64, complete bool) (*Snapshot, error) {
	if lst.maxVersion < 0 {
		return nil, ErrTableNotFound
	}
	if version < 0 {
		version = lst.maxVersion
	}
	if version > lst.maxVersion {
		return nil, fmt.Errorf("log: version %d requested, latest is %d: %w", version, lst.maxVersion, ErrVersionNotFound)
	}
	// Checkpoints that fail to read, newest first (L3). As in Delta Spark
	// (SnapshotManagement.createSnapshotFromGivenOrEquivalentLogSegment), the snapshot
	// is then built from the newest complete checkpoint older than the failed one, or
	// from version 0 when there is none, provided every JSON commit from there to the
	// version is present; at most maxCheckpointFallbacks times. When no such start
	// exists, the error leads with the first checkpoint's failure (the root cause).
	var cpErrs []error
	for i := len(lst.checkpoints) - 1; i >= 0; i-- {
		cp := lst.checkpoints[i]
		if cp.version > version {
			continue
		}
		if len(cpErrs) > maxCheckpointFallbacks {
			return nil, unreadableCheckpoints(version, cpErrs, fmt.Errorf("log: tried %d older starting points (as Delta Spark does), none could be read", maxCheckpointFallbacks))
		}
		// L1: every commit after the checkpoint must exist.
		for v := cp.version + 1; v <= version; v++ {
			if _, ok := lst.commits[v]; !ok {
				err := fmt.Errorf("log: %s missing while reading version %d from checkpoint %d: %w",
					CommitPath(v), version, cp.version, ErrMissingVersion)
				return nil, unreadableCheckpoints(version, cpErrs, err)
			}
		}
		r := newReplay()
		// A snapshot at the checkpoint's own version still reads that version's commit
		// for its timestamp (finish): fetch it while the checkpoint is read, which on
		// an object store saves a round trip.
		if o, ok := lst.commits[version]; ok && cp.version == version {
			r.lastCommitFetch = l.prefetchCommit(ctx, o.Path)
		}
		if err := l.readCheckpoint(ctx, cp, r.sizeHint, r.applyCheckpoint); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			cpErrs = append(cpErrs, fmt.Errorf("checkpoint %d is unreadable: %w", cp.version, err))
			continue // L3: fall back to an older checkpoint or to JSON replay
		}
		r.endCheckpoint()
		r.checkpointVersion = cp.version
		if err := l.replayCommits(ctx, r, lst, cp.version+1, version); err != nil {
			return nil, unreadableCheckpoints(version, cpErrs, err)
		}
		snap, err := l.finish(ctx, r, lst, version, cp)
		if err != nil {
			return nil, unreadableCheckpoints(version, cpErrs, err)
		}
		l.skipped(snap, cpErrs)
		return snap, nil
	}
	if !complete {
		err := fmt.Errorf("log: no usable checkpoint in partial listing: %w", ErrVersionNotFound)
		return nil, unreadableCheckpoints(version, cpErrs, err)
	}
	if len(cpErrs) > maxCheckpointFallbacks {
		return nil, unreadableCheckpoints(version, cpErrs, fmt.Errorf("log: tried %d older starting points (as Delta Spark does), none could be read", maxCheckpointFallbacks))
	}
	for v := int64(0); v <= version; v++ {
		if _, ok := lst.commits[v]; !ok {
			err := fmt.Errorf("log: %s missing while reading version %d: %w", CommitPath(v), version, ErrMissingVersion)
			return nil, unreadableCheckpoints(version, cpErrs, err)
		}
	}
	r := newReplay()
	r.checkpointVersion = -1
	if err := l.replayCommits(ctx, r, lst, 0, version); err != nil {
		return nil, unreadableCheckpoints(version, cpErrs, err)
	}
	snap, err := l.finish(ctx, r, lst, version, checkpointSet{version: -1})
	if err != nil {
		return nil, unreadableCheckpoints(version, cpErrs, err)
	}
	l.skipped(snap, cpErrs)
	return snap, nil
}

// maxCheckpointFallbacks is how many older starting points (an older checkpoint, or
// version 0) build tries after the checkpoint a snapshot should start from cannot be
// read: Delta Spark's spark.databricks.delta.snapshotLoading.maxRetries default.
const maxCheckpointFallbacks = 2

// unreadableCheckpoints returns err when no checkpoint failed; otherwise an error that
// leads with the first (newest) checkpoint's failure, the root cause, and says why no
// older start could be used (err). errors.Is matches both.
func unreadableCheckpoints(version int64, cpErrs []error, err error) error {
	if len(cpErrs) == 0 {
		return err
	}
	var older string
	if len(cpErrs) > 1 {
		older = fmt.Sprintf(" (and %d older: %v)", len(cpErrs)-1, errors.Join(cpErrs[1:]...))
	}
	return fmt.Errorf("log: cannot read version %d: %w%s; no older checkpoint with every later JSON commit, nor every commit from version 0, could be read instead: %w",
		version, cpErrs[0], older, err)
}

// skipped records on snap, and reports to the log's warning observers, the checkpoints
// that could not be read while building it.
func (l *Log) skipped(snap *Snapshot, cpErrs []error) {
	if len(cpErrs) == 0 {
		return
	}
	from := "every JSON commit from version 0"
	if snap.checkpointVersion >= 0 {
		from = fmt.Sprintf("checkpoint %d and the JSON commits after it", snap.checkpointVersion)
	}
	for _, e := range cpErrs {
		w := fmt.Sprintf("log: version %d was read from %s, because %v", snap.version, from, e)
		snap.warnings = append(snap.warnings, w)
		l.warnings.warn(w)
	}
}

// commitFetchWindow and commitFetchParallelism bound the commit files replayCommits
// holds in memory and has in flight: on an object store each commit is one GET, so
// fetching them one after another costs one round trip per version.
const (
	commitFetchWindow      = 64
	commitFetchParallelism = 16
)

// replayCommits applies the commits from..to in version order. The files are fetched
// in parallel, a window at a time, and applied in order (L1 is checked by the caller).
func (l *Log) replayCommits(ctx context.Context, r *replay, lst *listing, from, to int64) error {
	for start := from; start <= to; start += commitFetchWindow {
		end := min(to, start+commitFetchWindow-1)
		n := int(end - start + 1)
		data := make([][]byte, n)
		errs := make([]error, n)
		storage.ForEachLimit(ctx, n, commitFetchParallelism, func(ctx context.Context, i int) {
			data[i], errs[i] = l.fetchCommit(ctx, lst.commits[start+int64(i)].Path)
		})
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if errs[i] != nil {
				return errs[i]
			}
			v := start + int64(i)
			ci, err := parseCommit(lst.commits[v].Path, data[i], r.apply)
			data[i] = nil
			if err != nil {
				return err
			}
			r.lastCommitInfo = ci
			r.lastCommitVersion = v
		}
	}
	return nil
}

// readCommit streams the actions of one commit file and returns its commitInfo (or nil).
func (l *Log) readCommit(ctx context.Context, path string, fn func(*Action) error) (*CommitInfo, error) {
	data, err := l.fetchCommit(ctx, path)
	if err != nil {
		return nil, err
	}
	return parseCommit(path, data, fn)
}

// prefetchCommit starts fetching a commit file and returns a function that waits for
// it. Abandoning the function leaks nothing: the fetch ends with ctx or on its own.
func (l *Log) prefetchCommit(ctx context.Context, path string) func() ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := l.fetchCommit(ctx, path)
		ch <- result{data, err}
	}()
	var once sync.Once
	var res result
	return func() ([]byte, error) {
		once.Do(func() { res = <-ch })
		return res.data, res.err
	}
}

// fetchCommit reads one commit file whole.
func (l *Log) fetchCommit(ctx context.Context, path string) ([]byte, error) {
	data, err := l.store.Get(ctx, path)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("log: %s: %w: %w", path, ErrMissingVersion, err)
		}
		return nil, fmt.Errorf("log: reading %s: %w", path, err)
	}
	return data, nil
}

// parseCommit streams the actions of one commit file's bytes to fn (commitInfo aside)
// and returns its commitInfo (or nil).
func parseCommit(path string, data []byte, fn func(*Action) error) (*CommitInfo, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		// A commit has at least one action; an empty file is a broken write by
		// some other tool, never an empty version.
		return nil, fmt.Errorf("log: %s (version %s) is empty: %w", path, versionOf(path), ErrCorruptLog)
	}
	var ci *CommitInfo
	err := scanCommit(path, bytes.NewReader(data), func(a *Action) error {
		if a.CommitInfo != nil {
			ci = a.CommitInfo
			return nil
		}
		if fn == nil {
			return nil
		}
		return fn(a)
	})
	return ci, err
}

func (l *Log) finish(ctx context.Context, r *replay, lst *listing, version int64, cp checkpointSet) (*Snapshot, error) {
	if r.protocol == nil {
		return nil, fmt.Errorf("log: version %d: %w: no protocol action", version, ErrCorruptLog)
	}
	if r.metadata == nil {
		return nil, fmt.Errorf("log: version %d: %w: no metaData action", version, ErrCorruptLog)
	}
	if err := CheckReadable(*r.protocol); err != nil {
		return nil, fmt.Errorf("log: table at version %d: %w", version, err)
	}
	s := &Snapshot{
		log:               l,
		version:           version,
		protocol:          *r.protocol,
		metadata:          *r.metadata,
		txns:              r.txns,
		checkpointVersion: cp.version,
	}
	// Commit time of the snapshot version (commitInfo.timestamp, else file time).
	switch {
	case r.lastCommitVersion == version && r.lastCommitInfo != nil && commitTime(r.lastCommitInfo) > 0:
		s.timestamp = commitTime(r.lastCommitInfo)
	case lst.commits[version].Path != "" && r.lastCommitVersion != version:
		fetch := r.lastCommitFetch
		if fetch == nil {
			fetch = func() ([]byte, error) { return l.fetchCommit(ctx, lst.commits[version].Path) }
		}
		var ci *CommitInfo
		data, err := fetch()
		if err == nil {
			ci, err = parseCommit(lst.commits[version].Path, data, nil)
		}
		if err == nil && ci != nil && commitTime(ci) > 0 {
			s.timestamp = commitTime(ci)
		} else {
			s.timestamp = lst.commits[version].ModTime.UnixMilli()
		}
	case lst.commits[version].Path != "":
		s.timestamp = lst.commits[version].ModTime.UnixMilli()
	case len(cp.files) > 0:
		s.timestamp = cp.files[0].ModTime.UnixMilli()
	}
	// Collect in replay order (checkpoints are written sorted, so the slice
	// is nearly sorted and the sort below is cheap), skipping superseded adds.
	s.files = r.liveAdds()
	slices.SortFunc(s.files, func(a, b *Add) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.DeletionVector.UniqueID(), b.DeletionVector.UniqueID())
	})
	s.tombstones = make([]*Remove, 0, len(r.removes))
	for _, rm := range r.removes {
		s.tombstones = append(s.tombstones, rm)
	}
	slices.SortFunc(s.tombstones, func(a, b *Remove) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.DeletionVector.UniqueID(), b.DeletionVector.UniqueID())
	})
	for _, d := range r.domains {
		if !d.Removed {
			s.domains = append(s.domains, d)
		}
	}
	sort.Slice(s.domains, func(i, j int) bool { return s.domains[i].Domain < s.domains[j].Domain })
	return s, nil
}

// versionOf returns the version number of a commit file path, for messages.
func versionOf(path string) string {
	name := path[strings.LastIndexByte(path, '/')+1:]
	if v, _, ok := parseVersionPrefix(name); ok {
		return strconv.FormatInt(v, 10)
	}
	return "?"
}

// commitTime returns inCommitTimestamp, else timestamp, of a commitInfo.
func commitTime(ci *CommitInfo) int64 {
	if ci.InCommitTimestamp != nil {
		return *ci.InCommitTimestamp
	}
	return ci.Timestamp
}

// replay accumulates reconciled state (L3): newest action per (path, DV id) wins.
type replay struct {
	protocol *Protocol
	metadata *Metadata
	adds     map[string]*Add
	addOrder []*Add
	// dead are the adds of addOrder a remove cancelled; overwritten says an add
	// replaced another of the same key (then finish checks every add against adds).
	dead        map[*Add]struct{}
	overwritten bool
	// base indexes addOrder[:nBase], the adds of the checkpoint the replay started
	// from, which then are not in adds (endCheckpoint); a base add is live unless
	// dead holds it. cpRemoves are the checkpoint's removes, each with the number of
	// adds before it, until endCheckpoint reconciles them.
	base              *addIndex
	nBase             int
	cpRemoves         []cpRemove
	removes           map[string]*Remove
	txns              map[string]Txn
	domains           map[string]DomainMetadata
	lastCommitInfo    *CommitInfo
	lastCommitVersion int64
	checkpointVersion int64
	// lastCommitFetch, when set, returns the snapshot version's commit file fetched
	// in the background (see build).
	lastCommitFetch func() ([]byte, error)
}

// cpRemove is a remove read from a checkpoint after pos of its adds.
type cpRemove struct {
	pos int
	rm  *Remove
}

// sizeHint presizes the replay for a checkpoint of rows actions (most of them adds,
// in a large table), so that addOrder is not regrown while the checkpoint is read.
func (r *replay) sizeHint(rows int64) {
	if len(r.addOrder) == 0 && rows > 0 {
		r.addOrder = make([]*Add, 0, min(rows, 1<<24))
	}
}

// liveAdds returns the adds no later action cancelled, in replay order: exactly the
// values of r.adds and the base adds dead does not hold.
func (r *replay) liveAdds() []*Add {
	out := make([]*Add, 0, len(r.adds)+r.nBase)
	for i, a := range r.addOrder {
		live := false
		if i < r.nBase {
			_, gone := r.dead[a]
			live = !gone
		} else if r.overwritten {
			live = r.adds[a.Key()] == a
		} else {
			_, gone := r.dead[a]
			live = !gone
		}
		if live {
			out = append(out, a)
		}
	}
	return out
}

func newReplay() *replay {
	return &replay{
		adds:              map[string]*Add{},
		removes:           map[string]*Remove{},
		txns:              map[string]Txn{},
		domains:           map[string]DomainMetadata{},
		lastCommitVersion: -1,
	}
}

func (r *replay) apply(a *Action) error {
	switch {
	case a.Add != nil:
		k := a.Add.Key()
		if len(r.removes) > 0 {
			delete(r.removes, k)
		}
		r.killBase(k)
		n := len(r.adds)
		r.adds[k] = a.Add
		r.overwritten = r.overwritten || len(r.adds) == n
		r.addOrder = append(r.addOrder, a.Add)
	case a.Remove != nil:
		k := a.Remove.Key()
		if old, ok := r.adds[k]; ok {
			if r.dead == nil {
				r.dead = map[*Add]struct{}{}
			}
			r.dead[old] = struct{}{}
			delete(r.adds, k)
		} else {
			r.killBase(k)
		}
		r.removes[k] = a.Remove
	case a.Metadata != nil:
		r.metadata = a.Metadata
	case a.Protocol != nil:
		r.protocol = a.Protocol
	case a.Txn != nil:
		r.txns[a.Txn.AppID] = *a.Txn
	case a.DomainMetadata != nil:
		r.domains[a.DomainMetadata.Domain] = *a.DomainMetadata
	}
	return nil
}

// killBase marks the base add of key k, if any, as superseded or removed.
func (r *replay) killBase(k string) {
	if r.base == nil {
		return
	}
	if i := r.base.find(k); i >= 0 {
		if r.dead == nil {
			r.dead = map[*Add]struct{}{}
		}
		r.dead[r.addOrder[i]] = struct{}{}
	}
}

// applyCheckpoint applies an action of the checkpoint a replay starts from, on the
// loading goroutine: adds and removes are only recorded, in order, and reconciled by
// endCheckpoint, which must follow the checkpoint's last action.
func (r *replay) applyCheckpoint(a *Action) error {
	switch {
	case a.Add != nil:
		r.addOrder = append(r.addOrder, a.Add)
	case a.Remove != nil:
		r.cpRemoves = append(r.cpRemoves, cpRemove{pos: len(r.addOrder), rm: a.Remove})
	default:
		return r.apply(a)
	}
	return nil
}

// endCheckpoint reconciles the adds and removes applyCheckpoint recorded, with the
// result apply gives them in the same order (L3). A checkpoint holds each key once
// (adds unique, no remove of an added key), so the adds are indexed (buildAddIndex,
// concurrently) instead of entered in adds one by one, and are all live; removes go
// to removes. A checkpoint breaking that is replayed through apply instead.
func (r *replay) endCheckpoint() {
	adds, removes := r.addOrder, r.cpRemoves
	r.cpRemoves = nil
	if n := len(adds); n > 0 && n < 1<<32-1 {
		ix, dup := buildAddIndex(adds)
		clash := dup
		for i := 0; !clash && i < len(removes); i++ {
			clash = ix.find(removes[i].rm.Key()) >= 0
		}
		if !clash {
			r.base, r.nBase = ix, n
			for _, c := range removes {
				r.removes[c.rm.Key()] = c.rm
			}
			return
		}
	}
	r.addOrder = make([]*Add, 0, len(adds))
	r.adds = make(map[string]*Add, len(adds))
	var a Action
	j := 0
	for i := 0; i <= len(adds); i++ {
		for ; j < len(removes) && removes[j].pos == i; j++ {
			a = Action{Remove: removes[j].rm}
			_ = r.apply(&a)
		}
		if i < len(adds) {
			a = Action{Add: adds[i]}
			_ = r.apply(&a)
		}
	}
}
