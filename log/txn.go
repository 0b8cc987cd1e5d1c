package log

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/google/uuid"

	"github.com/skiplake/skiplake/storage"
)

// EngineVersion is the version reported in commitInfo.engineInfo.
const EngineVersion = "0.1.0"

// engineInfoPrefix starts the commitInfo.engineInfo skiplake writes.
const engineInfoPrefix = "skiplake/"

// Isolation levels written to commitInfo.isolationLevel.
const (
	// Serializable: concurrent appends conflict with a transaction that read the whole table.
	Serializable = "Serializable"
	// WriteSerializable: like Serializable but concurrent blind appends never conflict.
	WriteSerializable = "WriteSerializable"
	// SnapshotIsolation: used for dataChange=false-only transactions; appends never conflict.
	SnapshotIsolation = "SnapshotIsolation"
)

// TxnOptions configures a transaction. The zero value is ready to use.
type TxnOptions struct {
	// MaxRetries is how many times a commit that lost the race for its version
	// is retried at the next version (0: default 10; negative: no retry).
	MaxRetries int
	// IsolationLevel is Serializable (default) or WriteSerializable for
	// transactions that change data. Transactions whose file actions all have
	// dataChange=false always use SnapshotIsolation.
	IsolationLevel string
	// EngineInfo overrides commitInfo.engineInfo (default "skiplake/<EngineVersion>").
	EngineInfo string
	// DisableCheckpoint skips the automatic checkpoint after commits whose
	// version is a multiple of delta.checkpointInterval (default false).
	DisableCheckpoint bool
}

// Transaction collects actions and commits them optimistically (L2). It is
// single-use; its methods may be called from one goroutine at a time.
type Transaction struct {
	mu        sync.Mutex
	log       *Log
	snap      *Snapshot
	opts      TxnOptions
	adds      []*Add
	removes   []*Remove
	metadata  *Metadata
	protocol  *Protocol
	txns      []Txn
	domains   []DomainMetadata
	readFiles map[string]bool
	readAll   bool
	readPreds []ReadPredicate // see txn_predicates.go
	used      bool
	cpErr     error
	rt        rowTrackingState
	// props are the properties the commit results in, parsed once (effectiveProps);
	// nil until first needed, reset by SetMetadata.
	props *TableProperties
}

// NewTransaction starts a transaction that reads snap. On a snapshot from
// NewTableSnapshot the transaction creates the table: it commits version 0 with the
// snapshot's metadata and protocol (unless SetMetadata or SetProtocol replace them).
func (s *Snapshot) NewTransaction(opts TxnOptions) *Transaction {
	t := &Transaction{log: s.log, snap: s, opts: opts, readFiles: map[string]bool{}}
	if s.pending {
		md, p := s.metadata, s.protocol
		t.metadata, t.protocol = &md, &p
		t.domains = append(t.domains, s.domains...)
	}
	if s.changeMetadata {
		md := s.metadata
		t.metadata = &md
	}
	if s.changeProtocol {
		p := s.protocol
		t.protocol = &p
	}
	return t
}

// WithChange returns the state table version s will have after a commit that changes
// its metadata to md and its protocol to p (a write that evolves the schema, an
// overwrite that replaces it): s's version, files, transactions and domains, with md
// and p. Writers prepare their data files for it and commit them with a transaction
// started on it (NewTransaction), which commits the metaData action — and the
// protocol action when p differs from s's protocol — with whatever else it adds; its
// read version is s's, and like every metadata change it conflicts with any
// concurrent commit that changes metadata or protocol.
func (s *Snapshot) WithChange(md Metadata, p Protocol) *Snapshot {
	c := &Snapshot{log: s.log, version: s.version, protocol: p, metadata: md, files: s.files,
		tombstones: s.tombstones, txns: s.txns, domains: s.domains, timestamp: s.timestamp,
		checkpointVersion: s.checkpointVersion, pending: s.pending}
	c.changeMetadata = !s.pending
	c.changeProtocol = !s.pending && !reflect.DeepEqual(p, s.protocol)
	if s.changeProtocol {
		c.changeProtocol = true
	}
	return c
}

// NewTableSnapshot returns the state of a table that does not exist yet and will be
// created with metadata md, protocol p and domain metadata domains (a clustered
// table's clustering columns): version -1, no files. Writers use it to
// prepare a table's first data (its schema, partitioning and properties are md's) and
// commit that data in the same version-0 commit that creates the table (see
// NewTransaction), so a failed first write leaves no table behind. If another writer
// creates the table first, the commit fails with a *ConflictError at version 0
// (ErrProtocolChanged or ErrMetadataChanged).
func (l *Log) NewTableSnapshot(md Metadata, p Protocol, domains ...DomainMetadata) *Snapshot {
	s := l.emptySnapshot()
	s.metadata, s.protocol, s.pending = md, p, true
	s.domains = append([]DomainMetadata(nil), domains...)
	sort.Slice(s.domains, func(i, j int) bool { return s.domains[i].Domain < s.domains[j].Domain })
	return s
}

// emptySnapshot is the state of a table that does not exist yet.
func (l *Log) emptySnapshot() *Snapshot {
	return &Snapshot{log: l, version: -1, txns: map[string]Txn{}, checkpointVersion: -1}
}

// NewCreateTransaction starts a transaction that creates the table at version 0.
// It must set metadata and protocol.
func (l *Log) NewCreateTransaction(opts TxnOptions) *Transaction {
	return l.emptySnapshot().NewTransaction(opts)
}

// Create creates the table: commits version 0 with md, p and adds.
func (l *Log) Create(ctx context.Context, md Metadata, p Protocol, adds []*Add, info CommitInfo) (int64, error) {
	t := l.NewTableSnapshot(md, p).NewTransaction(TxnOptions{})
	t.Add(adds...)
	if info.Operation == "" {
		info.Operation = "CREATE TABLE"
	}
	return t.Commit(ctx, info)
}

// Add adds files.
func (t *Transaction) Add(adds ...*Add) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.adds = append(t.adds, adds...)
}

// Remove removes files. Removing a file implies having read it.
func (t *Transaction) Remove(removes ...*Remove) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removes = append(t.removes, removes...)
}

// SetMetadata replaces the table metadata.
func (t *Transaction) SetMetadata(md Metadata) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.metadata = &md
	t.props = nil
}

// SetProtocol replaces the table protocol.
func (t *Transaction) SetProtocol(p Protocol) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.protocol = &p
}

// SetTxn records the version of an idempotent writer (a txn action).
func (t *Transaction) SetTxn(appID string, version int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.log.now().UnixMilli()
	t.txns = append(t.txns, Txn{AppID: appID, Version: version, LastUpdated: &now})
}

// SetDomainMetadata adds a domainMetadata action.
func (t *Transaction) SetDomainMetadata(dm DomainMetadata) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.domains = append(t.domains, dm)
}

// ReadFiles declares files (log paths) whose contents the transaction depends on.
func (t *Transaction) ReadFiles(paths ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range paths {
		t.readFiles[canonicalPath(p)] = true
	}
}

// ReadWholeTable declares that the transaction depends on the whole table.
func (t *Transaction) ReadWholeTable() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.readAll = true
}

// CheckpointErr returns the error of the automatic checkpoint after a
// successful Commit (nil when none was due or it succeeded). A failed
// checkpoint never fails the commit.
func (t *Transaction) CheckpointErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cpErr
}

// Properties returns the table properties the commit results in: the snapshot's,
// or those of the metadata SetMetadata set, parsed once (P1). Shared: do not modify.
func (t *Transaction) Properties() *TableProperties {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.effectiveProps()
}

// effectiveProps is Properties with t.mu held.
func (t *Transaction) effectiveProps() *TableProperties {
	if t.metadata == nil {
		return t.snap.Properties()
	}
	if t.props == nil {
		t.props = ParseTableProperties(t.metadata.Configuration)
	}
	return t.props
}

// effective returns the protocol and metadata the commit results in.
func (t *Transaction) effective() (Protocol, Metadata) {
	p, md := t.snap.protocol, t.snap.metadata
	if t.protocol != nil {
		p = *t.protocol
	}
	if t.metadata != nil {
		md = *t.metadata
	}
	return p, md
}

func (t *Transaction) validate() error {
	if t.snap.version < 0 && (t.metadata == nil || t.protocol == nil) {
		return fmt.Errorf("log: creating a table needs metaData and protocol: %w", ErrInvalidTransaction)
	}
	p, md := t.effective()
	if err := checkWritable(p, md, t.effectiveProps()); err != nil {
		return fmt.Errorf("log: cannot write table: %w", err)
	}
	if t.metadata != nil {
		if t.metadata.ID == "" {
			return fmt.Errorf("log: metaData without id: %w", ErrInvalidTransaction)
		}
		s, err := ParseSchema(t.metadata.SchemaString)
		if err != nil {
			return fmt.Errorf("log: metaData schema: %w", err)
		}
		for _, c := range t.metadata.PartitionColumns {
			if s.Field(c) == nil {
				return fmt.Errorf("log: partition column %q not in schema: %w", c, ErrInvalidTransaction)
			}
		}
	}
	if err := checkAppendOnly(t.effectiveProps(), t.removes); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, a := range t.adds {
		if a == nil || a.Path == "" {
			return fmt.Errorf("log: add without path: %w", ErrInvalidTransaction)
		}
		if _, err := a.DecodedPath(); err != nil {
			return err
		}
		k := "a" + a.Key()
		if seen[k] {
			return fmt.Errorf("log: file %s added twice: %w", a.Path, ErrInvalidTransaction)
		}
		seen[k] = true
	}
	for _, r := range t.removes {
		if r == nil || r.Path == "" {
			return fmt.Errorf("log: remove without path: %w", ErrInvalidTransaction)
		}
		k := "r" + r.Key()
		if seen[k] {
			return fmt.Errorf("log: file %s removed twice: %w", r.Path, ErrInvalidTransaction)
		}
		seen[k] = true
	}
	for _, d := range t.domains {
		if d.Domain == "" {
			return fmt.Errorf("log: domainMetadata without domain: %w", ErrInvalidTransaction)
		}
	}
	if len(t.domains) > 0 && !contains(WriterFeatures(p), FeatureDomainMetadata) {
		return fmt.Errorf("log: domainMetadata needs the domainMetadata writer feature: %w", ErrInvalidTransaction)
	}
	return checkSystemDomains(p, t.domains)
}

// isolation returns the isolation level and whether the commit is a blind append.
func (t *Transaction) isolation() (string, bool) {
	dataChange := false
	for _, a := range t.adds {
		dataChange = dataChange || a.DataChange
	}
	for _, r := range t.removes {
		dataChange = dataChange || r.DataChange
	}
	blind := len(t.removes) == 0 && !t.readAll && len(t.readFiles) == 0 && len(t.readPreds) == 0 && t.metadata == nil && t.protocol == nil
	for _, a := range t.adds {
		blind = blind && a.DataChange
	}
	level := t.opts.IsolationLevel
	if level == "" {
		level = Serializable
	}
	if !dataChange && (len(t.adds) > 0 || len(t.removes) > 0) {
		level = SnapshotIsolation
	}
	return level, blind
}

// Commit writes the transaction as the next version with PutIfAbsent (L2).
// On losing the race it reads the winning commits, checks them for conflicts
// (returning a *ConflictError) and retries at the next version up to
// MaxRetries times. commitInfo is filled in Spark's shape (timestamp,
// readVersion, isolationLevel, isBlindAppend, engineInfo, txnId); the
// caller's Operation, OperationParameters and OperationMetrics are kept.
// After a successful commit at a multiple of delta.checkpointInterval a
// checkpoint is written; its failure is reported by CheckpointErr only.
func (t *Transaction) Commit(ctx context.Context, info CommitInfo) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.used {
		return -1, fmt.Errorf("log: transaction already committed or failed: %w", ErrInvalidTransaction)
	}
	t.used = true
	if err := t.validate(); err != nil {
		return -1, err
	}
	level, blind := t.isolation()
	readVersion := t.snap.version
	maxRetries := t.opts.MaxRetries
	if maxRetries == 0 {
		maxRetries = 10
	} else if maxRetries < 0 {
		maxRetries = 0
	}
	info.IsolationLevel = level
	info.IsBlindAppend = &blind
	if readVersion >= 0 {
		rv := readVersion
		info.ReadVersion = &rv
	}
	if info.EngineInfo = t.opts.EngineInfo; info.EngineInfo == "" {
		info.EngineInfo = engineInfoPrefix + EngineVersion
	}
	info.TxnID = uuid.NewString()
	t.rowTrackingTags(&info)
	if info.Operation == "" {
		info.Operation = "WRITE"
	}
	prevTS := t.snap.timestamp
	version := readVersion + 1
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return -1, err
		}
		ts := t.log.now().UnixMilli()
		if ts <= prevTS {
			ts = prevTS + 1 // monotonic commit timestamps
		}
		info.Timestamp = ts
		if err := t.prepareRowTracking(version); err != nil {
			return -1, err
		}
		data, err := MarshalActions(t.actions(&info))
		if err != nil {
			return -1, err
		}
		err = t.log.store.PutIfAbsent(ctx, CommitPath(version), data)
		if err == nil {
			break
		}
		if !errors.Is(err, storage.ErrExist) {
			// The write may have landed anyway (a failed directory fsync after the
			// link, a lost response to a PUT that succeeded): read the version back.
			outcome, rerr := t.readBack(ctx, version, info.TxnID)
			if rerr != nil {
				return -1, fmt.Errorf("log: writing %s: %v; reading it back: %v: %w", CommitPath(version), err, rerr, ErrCommitUnknown)
			}
			if outcome == landedNone {
				return -1, fmt.Errorf("log: writing %s: %w", CommitPath(version), err)
			}
			if outcome == landedMine {
				break
			}
			// landedOther: another writer won the version, as with ErrExist.
		}
		if attempt >= maxRetries {
			return -1, fmt.Errorf("log: version %d taken after %d attempts: %w", version, attempt+1, ErrTooManyRetries)
		}
		// Version taken: check every winner up to the newest commit, then retry after it.
		mine := false
		for {
			winTS, own, err := t.checkWinner(ctx, version, level, info.TxnID)
			if err != nil {
				return -1, err
			}
			if own {
				// An earlier attempt of this very commit landed (a retried
				// conditional PUT reports "exists" for its own first try).
				mine = true
				break
			}
			if winTS > prevTS {
				prevTS = winTS
			}
			version++
			if _, err := t.log.store.Stat(ctx, CommitPath(version)); err != nil {
				if errors.Is(err, storage.ErrNotExist) {
					break
				}
				return -1, fmt.Errorf("log: checking %s: %w", CommitPath(version), err)
			}
		}
		if mine {
			break
		}
	}
	if !t.opts.DisableCheckpoint && version > 0 {
		if version%t.effectiveProps().CheckpointInterval == 0 {
			t.cpErr = t.log.checkpointVersion(ctx, version)
		}
	}
	return version, nil
}

// actions orders the commit: commitInfo, protocol, metaData, txn,
// domainMetadata, removes, adds.
func (t *Transaction) actions(info *CommitInfo) []Action {
	adds, removes, domains := t.fileActions()
	out := make([]Action, 0, 3+len(t.txns)+len(domains)+len(removes)+len(adds))
	out = append(out, Action{CommitInfo: info})
	if t.protocol != nil {
		out = append(out, Action{Protocol: t.protocol})
	}
	if t.metadata != nil {
		out = append(out, Action{Metadata: t.metadata})
	}
	for i := range t.txns {
		out = append(out, Action{Txn: &t.txns[i]})
	}
	for i := range domains {
		out = append(out, Action{DomainMetadata: &domains[i]})
	}
	for _, r := range removes {
		out = append(out, Action{Remove: r})
	}
	for _, a := range adds {
		out = append(out, Action{Add: a})
	}
	return out
}

// commitOutcome is what reading a version back after an ambiguous write found.
type commitOutcome int

const (
	landedNone  commitOutcome = iota // the version does not exist: the write did not land
	landedMine                       // the version holds this transaction's commit (same txnId)
	landedOther                      // another writer's commit holds the version
)

// readBack reads version after a PutIfAbsent that failed with something other than
// ErrExist, and says whether this transaction's commit (txnID) is there. Every commit
// carries a fresh txnId (a random UUID set once per Commit), so an equal txnId proves
// the version is this transaction's.
func (t *Transaction) readBack(ctx context.Context, version int64, txnID string) (commitOutcome, error) {
	ci, err := t.log.readCommit(ctx, CommitPath(version), nil)
	if err != nil {
		if errors.Is(err, ErrMissingVersion) && errors.Is(err, storage.ErrNotExist) {
			return landedNone, nil
		}
		return landedNone, err
	}
	if ci != nil && ci.TxnID == txnID {
		return landedMine, nil
	}
	return landedOther, nil
}

// checkWinner reads the winning commit at version. When it is this transaction's own
// commit (its commitInfo.txnId equals txnID: an earlier attempt landed although it was
// reported as failed or "exists") it returns own=true. Otherwise it returns a
// *ConflictError when the winner conflicts with this transaction (Spark's
// ConflictChecker rules), else the winner's commit timestamp.
func (t *Transaction) checkWinner(ctx context.Context, version int64, level, txnID string) (ts int64, own bool, err error) {
	var (
		metadataChanged, protocolChanged bool
		removed, added, txnIDs, domains  []string
		winnerBlind                      bool
		addedFiles                       []*Add // dataChange adds, for read predicates
		rearranged                       = true // every file action has dataChange=false
	)
	path := CommitPath(version)
	ci, err := t.log.readCommit(ctx, path, func(a *Action) error {
		if err := t.observeWinner(version, a); err != nil {
			return err
		}
		switch {
		case a.Metadata != nil:
			metadataChanged = true
		case a.Protocol != nil:
			protocolChanged = true
		case a.Remove != nil:
			removed = append(removed, canonicalPath(a.Remove.Path))
			rearranged = rearranged && !a.Remove.DataChange
		case a.Add != nil:
			if a.Add.DataChange {
				added = append(added, canonicalPath(a.Add.Path))
				addedFiles = append(addedFiles, a.Add)
				rearranged = false
			}
		case a.Txn != nil:
			txnIDs = append(txnIDs, a.Txn.AppID)
		case a.DomainMetadata != nil:
			domains = append(domains, a.DomainMetadata.Domain)
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("log: reading winning commit %d: %w", version, err)
	}
	if ci != nil && ci.TxnID != "" && ci.TxnID == txnID {
		return commitTime(ci), true, nil
	}
	if ci != nil {
		ts = commitTime(ci)
		winnerBlind = ci.IsBlindAppend != nil && *ci.IsBlindAppend
	}
	conflict := func(kind error, files []string) error {
		sort.Strings(files)
		return &ConflictError{Kind: kind, Version: version, Files: files, Rearrangement: rearranged && !metadataChanged && !protocolChanged}
	}
	if protocolChanged {
		return 0, false, conflict(ErrProtocolChanged, nil)
	}
	if metadataChanged {
		return 0, false, conflict(ErrMetadataChanged, nil)
	}
	// Files this transaction read: declared ones, the removed ones, or all of the snapshot.
	var readHit, deleteHit []string
	myRemoves := map[string]bool{}
	for _, r := range t.removes {
		myRemoves[canonicalPath(r.Path)] = true
	}
	var snapFiles map[string]bool
	if t.readAll {
		snapFiles = make(map[string]bool, len(t.snap.files))
		for _, f := range t.snap.files {
			snapFiles[canonicalPath(f.Path)] = true
		}
	}
	for _, p := range removed {
		switch {
		case myRemoves[p]:
			deleteHit = append(deleteHit, p)
		case t.readFiles[p] || snapFiles[p]:
			readHit = append(readHit, p)
		}
	}
	if len(readHit) > 0 {
		return 0, false, conflict(ErrConcurrentDeleteRead, readHit)
	}
	if len(deleteHit) > 0 {
		return 0, false, conflict(ErrConcurrentDeleteDelete, deleteHit)
	}
	if t.readAll && len(added) > 0 {
		// A blind append conflicts under WriteSerializable only with a transaction
		// that changes the metadata (Spark's ConflictChecker).
		check := level == Serializable || (level == WriteSerializable && (!winnerBlind || t.metadata != nil))
		if check {
			return 0, false, conflict(ErrConcurrentAppend, added)
		}
	}
	if hit := t.predicateHits(level, winnerBlind, addedFiles); len(hit) > 0 {
		return 0, false, conflict(ErrConcurrentAppend, hit)
	}
	var sameApp []string
	for _, id := range txnIDs {
		for _, mine := range t.txns {
			if mine.AppID == id {
				sameApp = append(sameApp, id)
			}
		}
	}
	for _, d := range domains {
		for _, mine := range t.domains {
			if mine.Domain == d {
				sameApp = append(sameApp, "domain "+d)
			}
		}
	}
	if len(sameApp) > 0 {
		return 0, false, conflict(ErrConcurrentTransaction, sameApp)
	}
	return ts, false, nil
}
