package log

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestAddCheckConstraintUpgradesLikeSpark(t *testing.T) {
	md := testMetadata()
	cases := []struct {
		name string
		p    Protocol
		want Protocol
	}{
		{"legacy 1/2 becomes 1/3", legacy12, Protocol{MinReaderVersion: 1, MinWriterVersion: 3}},
		{"legacy 2/5 already has it", Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, Protocol{MinReaderVersion: 2, MinWriterVersion: 5}},
		{"table features gain checkConstraints", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "checkConstraints"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, out, err := AddCheckConstraint(c.p, md, "Positive_ID", "id > 0")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, c.want) {
				t.Fatalf("protocol %+v, want %+v", p, c.want)
			}
			if out.Configuration["delta.constraints.positive_id"] != "id > 0" {
				t.Fatalf("configuration %v", out.Configuration)
			}
			if len(md.Configuration) != 0 {
				t.Fatal("the input metadata was modified")
			}
			if _, _, err := AddCheckConstraint(p, out, "POSITIVE_id", "id >= 0"); !errors.Is(err, ErrConstraintExists) || !strings.Contains(err.Error(), "id > 0") {
				t.Fatalf("adding it again: %v", err)
			}
		})
	}
	for _, bad := range []string{"", "1x", "a b", "a.b"} {
		if _, _, err := AddCheckConstraint(legacy12, md, bad, "id > 0"); !errors.Is(err, ErrInvalidProperty) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
}

func TestDropCheckConstraint(t *testing.T) {
	md := testMetadata()
	md.Configuration = map[string]string{"delta.constraints.pos": "id > 0", "delta.appendOnly": "false"}
	out, found, err := DropCheckConstraint(md, "POS", false)
	if err != nil || !found || len(out.Configuration) != 1 || md.Configuration["delta.constraints.pos"] == "" {
		t.Fatalf("drop: %v %v %v", out.Configuration, found, err)
	}
	if _, _, err := DropCheckConstraint(out, "pos", false); !errors.Is(err, ErrConstraintNotFound) {
		t.Fatalf("dropping a missing constraint: %v", err)
	}
	if _, found, err := DropCheckConstraint(out, "pos", true); err != nil || found {
		t.Fatalf("IF EXISTS: %v %v", found, err)
	}
}

// The properties route is refused: constraints are added by ADD CONSTRAINT, which
// checks the rows.
func TestConstraintPropertiesRefused(t *testing.T) {
	md := testMetadata()
	md.Configuration = map[string]string{"delta.constraints.pos": "id > 0"}
	for _, ch := range []PropertyChange{{Set: map[string]string{"delta.constraints.neg": "id < 0"}}, {Unset: []string{"delta.constraints.pos"}}} {
		if _, _, err := ApplyPropertyChange(Protocol{MinReaderVersion: 1, MinWriterVersion: 3}, md, ch); !errors.Is(err, ErrInvalidProperty) || !strings.Contains(err.Error(), "CONSTRAINT") {
			t.Errorf("%+v: %v", ch, err)
		}
	}
	// Other properties of a table with constraints can still be set.
	if _, out, err := ApplyPropertyChange(Protocol{MinReaderVersion: 1, MinWriterVersion: 3}, md, PropertyChange{Set: map[string]string{"delta.appendOnly": "true"}}); err != nil || out.Configuration["delta.constraints.pos"] != "id > 0" {
		t.Fatalf("setting another property: %v", err)
	}
}

func TestPrepareCreateWriteRuleProtocols(t *testing.T) {
	field := func(name, typ, md string) string {
		return `{"name":"` + name + `","type":"` + typ + `","nullable":true,"metadata":` + md + `}`
	}
	schema := func(fields ...string) string {
		return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
	}
	id := field("id", "long", `{}`)
	gen := field("d", "date", `{"delta.generationExpression":"CAST(ts AS DATE)"}`)
	ts := field("ts", "timestamp", `{}`)
	ident := field("n", "long", `{"delta.identity.start":1,"delta.identity.step":1,"delta.identity.allowExplicitInsert":false}`)
	inv := field("x", "integer", `{"delta.invariants":"{\"expression\":{\"expression\":\"x > 3\"}}"}`)
	ntz := field("z", "timestamp_ntz", `{}`)
	cases := []struct {
		name   string
		schema string
		want   Protocol
	}{
		{"invariants: writer 2", schema(id, inv), legacy12},
		{"generated column: writer 4", schema(ts, gen), Protocol{MinReaderVersion: 1, MinWriterVersion: 4}},
		{"identity column: writer 6", schema(ident, id), Protocol{MinReaderVersion: 1, MinWriterVersion: 6}},
		{"generated column with timestamp_ntz: table features", schema(ts, gen, ntz),
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz", "generatedColumns"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _, err := PrepareCreate(Metadata{ID: "x", SchemaString: c.schema}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, c.want) {
				t.Fatalf("protocol %+v, want %+v", p, c.want)
			}
		})
	}
}

func TestFieldIdentityAndHighWaterMarks(t *testing.T) {
	sch := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{"delta.identity.start":10,"delta.identity.step":-3,"delta.identity.allowExplicitInsert":true,"comment":"a < b"}},{"name":"v","type":"string","nullable":true,"metadata":{}}]}`
	md := Metadata{ID: "x", SchemaString: sch, Configuration: map[string]string{}}
	s, _ := ParseSchema(sch)
	got, ok, err := FieldIdentity(&s.Fields[0])
	if err != nil || !ok || got != (Identity{Start: 10, Step: -3, AllowExplicitInsert: true}) {
		t.Fatalf("identity %+v %v %v", got, ok, err)
	}
	if _, ok, err := FieldIdentity(&s.Fields[1]); ok || err != nil {
		t.Fatal("v is not an identity column")
	}
	next, err := SetIdentityHighWaterMarks(md, map[string]int64{"id": 4})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(next.SchemaString, `"delta.identity.highWaterMark":4`) || !strings.Contains(next.SchemaString, `"comment":"a < b"`) {
		t.Fatalf("schema %s", next.SchemaString)
	}
	if !IdentityOnlyChange(md, next) || IdentityOnlyChange(md, md) {
		t.Fatal("IdentityOnlyChange")
	}
	other := next
	other.Configuration = map[string]string{"delta.appendOnly": "true"}
	if IdentityOnlyChange(md, other) {
		t.Fatal("a configuration change is not identity-only")
	}
	if _, err := SetIdentityHighWaterMarks(md, map[string]int64{"v": 1}); err == nil {
		t.Fatal("v is not an identity column")
	}
	bad := strings.Replace(sch, `"delta.identity.step":-3`, `"delta.identity.step":0`, 1)
	s2, _ := ParseSchema(bad)
	if _, _, err := FieldIdentity(&s2.Fields[0]); !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), "cannot be 0") {
		t.Fatalf("step 0: %v", err)
	}
}

// Delta Spark's conflict rule for identity columns: a winner that only advanced
// high-water marks passes a transaction that changes no metadata (it commits at the
// next version), and conflicts with one that commits metadata itself; a winner with
// any other metadata change conflicts with everything.
func TestIdentityOnlyWinnerConflicts(t *testing.T) {
	ctx := context.Background()
	sch := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{"delta.identity.start":1,"delta.identity.step":1,"delta.identity.allowExplicitInsert":false}}]}`
	l := New(memStore())
	md := testMetadata()
	md.SchemaString = sch
	if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 6}, nil, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	hwm := func(v int64) Metadata {
		m, err := SetIdentityHighWaterMarks(snap.Metadata(), map[string]int64{"id": v})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	winner := snap.NewTransaction(TxnOptions{})
	winner.SetMetadata(hwm(5))
	winner.Add(newAdd("w.parquet", 5))
	if _, err := winner.Commit(ctx, CommitInfo{Operation: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	ci, err := l.readCommit(ctx, CommitPath(1), nil)
	if err != nil || ci.Tags[IdentityCommitTag] != "true" {
		t.Fatalf("winner's commitInfo tags %v (%v)", ci.Tags, err)
	}
	// A blind append without metadata (explicit values) passes.
	plain := snap.NewTransaction(TxnOptions{})
	plain.Add(newAdd("p.parquet", 1))
	if v, err := plain.Commit(ctx, CommitInfo{Operation: "WRITE"}); err != nil || v != 2 {
		t.Fatalf("append without metadata after an identity-only winner: %d %v", v, err)
	}
	// Another generating writer (metadata of its own) conflicts.
	gen := snap.NewTransaction(TxnOptions{})
	gen.SetMetadata(hwm(3))
	gen.Add(newAdd("g.parquet", 3))
	if _, err := gen.Commit(ctx, CommitInfo{Operation: "WRITE"}); !errors.Is(err, ErrMetadataChanged) {
		t.Fatalf("second generating writer: %v", err)
	}
	// A winner that changes more than the high-water mark conflicts with all.
	snap2, _ := l.Snapshot(ctx, -1)
	alter := snap2.NewTransaction(TxnOptions{})
	m := snap2.Metadata()
	m.Configuration = map[string]string{"delta.constraints.c": "id > 0"}
	alter.SetMetadata(m)
	if _, err := alter.Commit(ctx, CommitInfo{Operation: "ADD CONSTRAINT"}); err != nil {
		t.Fatal(err)
	}
	late := snap2.NewTransaction(TxnOptions{})
	late.Add(newAdd("late.parquet", 1))
	if _, err := late.Commit(ctx, CommitInfo{Operation: "WRITE"}); !errors.Is(err, ErrMetadataChanged) {
		t.Fatalf("append after a constraint was added concurrently: %v", err)
	}
}

func TestInvariantJSON(t *testing.T) {
	got, err := Invariant(`{"expression": { "expression": "x > 3"} }`)
	if err != nil || got != "x > 3" {
		t.Fatalf("%q %v", got, err)
	}
	if back, _ := Invariant(InvariantJSON("a < b")); back != "a < b" {
		t.Fatal(back)
	}
	for _, bad := range []any{"{}", `{"expression":{}}`, "x", 5} {
		if _, err := Invariant(bad); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
