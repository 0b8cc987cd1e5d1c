package log

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Row tracking (PROTOCOL.md "Row Tracking"). While a table's protocol supports the
// rowTracking writer feature and delta.rowTrackingSuspended is not true, every commit
// of a Transaction gives its file actions default row IDs and row commit versions:
//
//   - an add whose path is a live file of the snapshot with those fields set (a
//     recommit: a new deletion vector, new statistics) and every remove keep the
//     values of that file;
//   - every other add is a new file: baseRowId is one above the high-water mark and
//     the mark moves up by the file's numRecords (the statistics must have it), and
//     defaultRowCommitVersion is the version being committed;
//   - the commit carries a delta.rowTracking domain with the new high-water mark when
//     it assigned fresh IDs.
//
// Hostile high-water marks (RT1): before it assigns anything a commit checks that the
// mark is not below a row ID already assigned (by a live file of the snapshot or of a
// winning concurrent commit: baseRowId + numRecords - 1), which a mark lowered by hand,
// a removed delta.rowTracking domain or a foreign writer would cause, and that no new
// file's range passes math.MaxInt64. Either is refused (ErrCorruptLog naming the
// file and the mark), never wrapped around into repeated or negative IDs.
//
// The values are assigned per commit attempt: a retry at a later version starts from
// the high-water mark the winning commits left (read from their delta.rowTracking
// domain), so two writers never hand out the same IDs, and a concurrent commit that
// only raised the mark is not a conflict.
//
// Stable row IDs: package optimize materializes the stable row IDs and row commit
// versions of the rows it copies (hidden columns named by the table's
// delta.rowTracking.materialized* properties) and says so with
// PreserveRowTracking. Other writers that copy rows give them the new file's fresh
// IDs, which are unique in the version: PROTOCOL.md ("Row IDs") requires that, and only
// recommends keeping stable IDs.

// RowTrackingActive reports whether writers must assign row IDs and row commit
// versions on a table with protocol p and configuration props: the protocol
// supports rowTracking and delta.rowTrackingSuspended is not true.
func RowTrackingActive(p Protocol, props *TableProperties) bool {
	return p.Supports(FeatureRowTracking) && !props.RowTrackingSuspended
}

// RowIDHighWaterMark returns the highest fresh row ID assigned so far (the
// delta.rowTracking domain), or -1 when none was. A domain that does not parse is
// an error wrapping ErrCorruptLog.
func (s *Snapshot) RowIDHighWaterMark() (int64, error) {
	d, ok := s.Domain(DomainRowTracking)
	if !ok {
		return -1, nil
	}
	return parseHighWaterMark(d.Configuration)
}

func parseHighWaterMark(config string) (int64, error) {
	var c struct {
		HWM *json.Number `json:"rowIdHighWaterMark"`
	}
	if err := json.Unmarshal([]byte(config), &c); err != nil || c.HWM == nil {
		return 0, fmt.Errorf("%w: domain %s %q: no rowIdHighWaterMark", ErrCorruptLog, DomainRowTracking, config)
	}
	n, err := c.HWM.Int64()
	if err != nil || n < -1 {
		return 0, fmt.Errorf("%w: domain %s: rowIdHighWaterMark %s is not a row ID", ErrCorruptLog, DomainRowTracking, c.HWM.String())
	}
	return n, nil
}

func highWaterMarkDomain(hwm int64) DomainMetadata {
	return DomainMetadata{Domain: DomainRowTracking, Configuration: `{"rowIdHighWaterMark":` + strconv.FormatInt(hwm, 10) + `}`}
}

// materializedColumnNames returns fresh names for the hidden columns that hold
// materialized row IDs and row commit versions (Delta Spark's naming).
func materializedColumnNames() (rowID, commitVersion string) {
	return "_row-id-col-" + uuid.NewString(), "_row-commit-version-col-" + uuid.NewString()
}

// checkRowTrackingEnablement checks a configuration that turns delta.enableRowTracking
// on: the table must not be suspended, and the materialized column names must be set,
// distinct and not among the schema's columns (physical names too).
func checkRowTrackingEnablement(props *TableProperties, schema *StructType) error {
	if props.RowTrackingSuspended {
		return fmt.Errorf("%s and %s are both true: row tracking cannot be enabled while it is suspended", PropEnableRowTracking, PropRowTrackingSuspended)
	}
	id, ver := props.MaterializedRowIDColumn, props.MaterializedRowCommitVersionColumn
	if id == "" || ver == "" {
		return fmt.Errorf("row tracking needs %s and %s", PropMaterializedRowIDColumn, PropMaterializedRowCommitVersionColumn)
	}
	if strings.EqualFold(id, ver) {
		return fmt.Errorf("the materialized row ID and row commit version columns have the same name %q", id)
	}
	if schema != nil {
		for _, leaf := range schema.Fields {
			for _, n := range []string{leaf.Name, leaf.PhysicalName()} {
				if strings.EqualFold(n, id) || strings.EqualFold(n, ver) {
					return fmt.Errorf("column %q has the name of a materialized row tracking column", n)
				}
			}
		}
	}
	return nil
}

// rowTrackingState is what a Transaction keeps between commit attempts.
type rowTrackingState struct {
	hwm     int64 // the high-water mark the next attempt starts from
	started bool
	// assigned is the highest row ID a live file of the snapshot or of a winning
	// commit holds (-1: none), and assignedBy that file (RT1).
	assigned   int64
	assignedBy string
	live       map[string]*Add // the snapshot's live files by canonical path (built once)
	// preserves is set by PreserveRowTracking.
	preserves bool

	// Set by prepareRowTracking for the current attempt.
	adds    []*Add
	removes []*Remove
	domain  *DomainMetadata
}

// prepareRowTracking assigns row tracking fields for a commit at version (see the
// comment at the top of this file), or leaves the file actions as they are when row
// tracking is not active. It is called once per commit attempt.
func (t *Transaction) prepareRowTracking(version int64) error {
	rt := &t.rt
	rt.adds, rt.removes, rt.domain = nil, nil, nil
	p, md := t.effective()
	props := t.effectiveProps()
	if props.EnableRowTracking && !t.snap.Properties().EnableRowTracking {
		schema, _ := ParseSchema(md.SchemaString)
		if err := checkRowTrackingEnablement(props, schema); err != nil {
			return fmt.Errorf("log: enabling row tracking: %v: %w", err, ErrInvalidTransaction)
		}
	}
	if !RowTrackingActive(p, props) {
		return nil
	}
	if !rt.started {
		hwm, err := t.snap.RowIDHighWaterMark()
		if err != nil {
			return err
		}
		rt.hwm, rt.started = hwm, true
		rt.assigned = -1
		rt.live = make(map[string]*Add, len(t.snap.files))
		for _, f := range t.snap.files {
			rt.live[canonicalPath(f.Path)] = f
			if err := rt.noteAssigned(f); err != nil {
				return err
			}
		}
	}
	hwm := rt.hwm
	if hwm < rt.assigned {
		return fmt.Errorf("log: %s high-water mark %d is below row ID %d, already assigned to %s: fresh row IDs would repeat it (a lowered or removed %s domain): %w",
			DomainRowTracking, hwm, rt.assigned, rt.assignedBy, DomainRowTracking, ErrCorruptLog)
	}
	rt.adds = make([]*Add, len(t.adds))
	readded := map[string]bool{}
	for i, a := range t.adds {
		c := *a
		prev := rt.live[canonicalPath(a.Path)]
		if prev != nil && prev.BaseRowID != nil {
			c.BaseRowID = prev.BaseRowID
		} else {
			n, ok := a.NumRecords()
			if !ok {
				return fmt.Errorf("log: file %s has no numRecords in its statistics; row tracking needs it to assign row IDs: %w", a.Path, ErrInvalidTransaction)
			}
			if n < 0 {
				return fmt.Errorf("log: file %s has numRecords %d; row tracking cannot assign it row IDs: %w", a.Path, n, ErrInvalidTransaction)
			}
			if hwm == math.MaxInt64 || hwm > math.MaxInt64-n {
				return fmt.Errorf("log: row IDs exhausted: %d rows of file %s above the %s high-water mark %d would pass the largest row ID %d: %w",
					n, a.Path, DomainRowTracking, hwm, int64(math.MaxInt64), ErrCorruptLog)
			}
			base := hwm + 1
			c.BaseRowID = &base
			hwm += n
		}
		if prev != nil && prev.DefaultRowCommitVersion != nil {
			c.DefaultRowCommitVersion = prev.DefaultRowCommitVersion
		} else {
			v := version
			c.DefaultRowCommitVersion = &v
		}
		rt.adds[i] = &c
		readded[canonicalPath(a.Path)] = true
	}
	rt.removes = make([]*Remove, len(t.removes))
	for i, r := range t.removes {
		c := *r
		if prev := rt.live[canonicalPath(r.Path)]; prev != nil {
			if c.BaseRowID == nil {
				c.BaseRowID = prev.BaseRowID
			}
			if c.DefaultRowCommitVersion == nil {
				c.DefaultRowCommitVersion = prev.DefaultRowCommitVersion
			}
		}
		rt.removes[i] = &c
		readded[canonicalPath(r.Path)] = true
	}
	if props.EnableRowTracking {
		// Every live file of the resulting version must have row IDs (PROTOCOL.md
		// "Writer Requirements for Row Tracking": enabling row tracking needs a
		// backfill first, or in the same commit).
		for path, f := range rt.live {
			if (f.BaseRowID == nil || f.DefaultRowCommitVersion == nil) && !readded[path] {
				return fmt.Errorf("log: file %s has no row IDs while %s is true; re-add it in the commit (a backfill): %w",
					f.Path, PropEnableRowTracking, ErrInvalidTransaction)
			}
		}
	}
	if hwm > rt.hwm {
		d := highWaterMarkDomain(hwm)
		rt.domain = &d
	}
	return nil
}

// observeWinner records what a winning concurrent commit at version changed that
// the next attempt depends on: the row ID high-water mark. A transaction that enables
// row tracking conflicts with a winner that added a file without row IDs (the file
// would be live without them once row tracking is on).
func (t *Transaction) observeWinner(version int64, a *Action) error {
	if a.Add != nil && a.Add.BaseRowID == nil && t.metadata != nil &&
		t.effectiveProps().EnableRowTracking && !t.snap.Properties().EnableRowTracking {
		return &ConflictError{Kind: ErrConcurrentAppend, Version: version, Files: []string{a.Add.Path}}
	}
	if a.Add != nil && t.rt.started {
		if err := t.rt.noteAssigned(a.Add); err != nil {
			return fmt.Errorf("log: version %d: %w", version, err)
		}
	}
	if a.DomainMetadata == nil || a.DomainMetadata.Domain != DomainRowTracking || !t.rt.started {
		return nil
	}
	hwm, err := parseHighWaterMark(a.DomainMetadata.Configuration)
	if err != nil {
		return err
	}
	if hwm > t.rt.hwm {
		t.rt.hwm = hwm
	}
	return nil
}

// noteAssigned records the row IDs file a holds (RT1): baseRowId through
// baseRowId + numRecords - 1. A negative baseRowId, or a range past math.MaxInt64, is
// ErrCorruptLog.
func (rt *rowTrackingState) noteAssigned(a *Add) error {
	if a.BaseRowID == nil {
		return nil
	}
	base := *a.BaseRowID
	if base < 0 {
		return fmt.Errorf("log: file %s has baseRowId %d: %w", a.Path, base, ErrCorruptLog)
	}
	last := base
	if n, ok := a.NumRecords(); ok && n > 0 {
		if n-1 > math.MaxInt64-base {
			return fmt.Errorf("log: file %s: %d rows from baseRowId %d pass the largest row ID: %w", a.Path, n, base, ErrCorruptLog)
		}
		last = base + n - 1
	}
	if last > rt.assigned {
		rt.assigned, rt.assignedBy = last, a.Path
	}
	return nil
}

// fileActions returns the adds, removes and domains the current attempt commits:
// with row tracking fields assigned when row tracking is active.
func (t *Transaction) fileActions() ([]*Add, []*Remove, []DomainMetadata) {
	adds, removes, domains := t.adds, t.removes, t.domains
	if t.rt.adds != nil {
		adds, removes = t.rt.adds, t.rt.removes
	}
	if t.rt.domain != nil {
		domains = append(append([]DomainMetadata(nil), domains...), *t.rt.domain)
	}
	return adds, removes, domains
}

// BackfillRowIDs returns the adds that give every live file of s without row IDs
// its row IDs: each such file re-added with dataChange=false (the transaction that
// commits them assigns the IDs). Committed together with delta.enableRowTracking=true
// they satisfy PROTOCOL.md's precondition for enabling row tracking ("Writer
// Requirements for Row Tracking").
func (s *Snapshot) BackfillRowIDs() []*Add {
	var out []*Add
	for _, f := range s.files {
		if f.BaseRowID != nil && f.DefaultRowCommitVersion != nil {
			continue
		}
		c := *f
		c.DataChange = false
		c.BaseRowID, c.DefaultRowCommitVersion = nil, nil
		out = append(out, &c)
	}
	return out
}

// checkSystemDomains refuses domainMetadata actions a caller may not commit:
// system-controlled domains (names starting with "delta.") other than the clustering
// domain of a table with the clustering feature; the row-tracking domain is the
// transaction's own.
func checkSystemDomains(p Protocol, domains []DomainMetadata) error {
	for _, d := range domains {
		if !strings.HasPrefix(d.Domain, "delta.") {
			continue
		}
		if d.Domain == DomainClustering && contains(WriterFeatures(p), FeatureClustering) {
			continue
		}
		return fmt.Errorf("log: domain %s is system-controlled and cannot be set here: %w", d.Domain, ErrInvalidTransaction)
	}
	return nil
}

// TagRowTrackingPreserved is the commitInfo tag that says whether a commit kept the
// stable row IDs and row commit versions of the rows it copied (PROTOCOL.md "Writer
// Requirements for Row Tracking").
const TagRowTrackingPreserved = "delta.rowTracking.preserved"

// rowTrackingTags sets delta.rowTracking.preserved on the commits of a table with
// row tracking enabled: true when the writer declared it kept the stable IDs of the
// rows it copies (PreserveRowTracking); otherwise false for a commit that may copy
// rows — it removes files it does not re-add and adds new ones (a copy-on-write
// rewrite) — and true for any other (appends, deletes of whole files, new deletion
// vectors, metadata changes), which copies no row.
func (t *Transaction) rowTrackingTags(info *CommitInfo) {
	if !t.effectiveProps().EnableRowTracking {
		return
	}
	if t.rt.preserves {
		if info.Tags == nil {
			info.Tags = map[string]string{}
		}
		info.Tags[TagRowTrackingPreserved] = "true"
		return
	}
	added := make(map[string]bool, len(t.adds))
	for _, a := range t.adds {
		added[canonicalPath(a.Path)] = true
	}
	copies := false
	for _, r := range t.removes {
		if !added[canonicalPath(r.Path)] {
			copies = len(t.adds) > 0
			break
		}
	}
	if info.Tags == nil {
		info.Tags = map[string]string{}
	}
	info.Tags[TagRowTrackingPreserved] = strconv.FormatBool(!copies)
}

// PreserveRowTracking declares that the rows this transaction copies keep their
// stable row IDs and row commit versions (the writer materialized them in the new
// files): the commit then says delta.rowTracking.preserved=true.
func (t *Transaction) PreserveRowTracking() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rt.preserves = true
}
