package log

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestChangeDataFeedProtocol: enabling the change data feed upgrades the protocol as
// Delta Spark does (a legacy table gets writer 7 listing the features its legacy
// version implied plus changeDataFeed; a writer-4 table already has it), and a table
// created with it lists exactly changeDataFeed.
func TestChangeDataFeedProtocol(t *testing.T) {
	on := map[string]string{PropEnableChangeDataFeed: "true"}
	cases := []struct {
		name string
		p    Protocol
		want Protocol
	}{
		{"legacy 1/2 moves to table features", legacy12,
			Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureAppendOnly, FeatureInvariants, FeatureChangeDataFeed}}},
		{"legacy 1/4 already implies it", Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, Protocol{MinReaderVersion: 1, MinWriterVersion: 4}},
		{"table features gain it", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureDeletionVectors}, WriterFeatures: []string{FeatureDeletionVectors}},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureDeletionVectors}, WriterFeatures: []string{FeatureDeletionVectors, FeatureChangeDataFeed}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, md, err := ApplyPropertyChange(c.p, propsMetadata(), PropertyChange{Set: on})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, c.want) {
				t.Fatalf("protocol %+v, want %+v", p, c.want)
			}
			if md.Configuration[PropEnableChangeDataFeed] != "true" {
				t.Fatalf("configuration %v", md.Configuration)
			}
			if err := CheckWritable(p, md); err != nil {
				t.Fatalf("a table with the change data feed on must be writable: %v", err)
			}
		})
	}
	p, _, err := PrepareCreate(propsMetadata(), on)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureChangeDataFeed}}); !reflect.DeepEqual(p, want) {
		t.Fatalf("created with %+v, want %+v", p, want)
	}
}

// TestChangeDataColumnsReserved: Delta Spark refuses the change data feed on a
// table with a column named like a change read's extra columns, and refuses adding
// such a column to a table that has it on.
func TestChangeDataColumnsReserved(t *testing.T) {
	on := map[string]string{PropEnableChangeDataFeed: "true"}
	md := propsMetadata()
	md.SchemaString = strings.Replace(propsSchema, `"name":"flag"`, `"name":"_Commit_Version"`, 1)
	for name, f := range map[string]func() error{
		"enable on an existing table": func() error { _, _, err := ApplyPropertyChange(legacy12, md, PropertyChange{Set: on}); return err },
		"create with the feed on":     func() error { _, _, err := PrepareCreate(md, on); return err },
	} {
		err := f()
		if !errors.Is(err, ErrInvalidProperty) || !strings.Contains(err.Error(), `"_Commit_Version"`) {
			t.Errorf("%s: err = %v, want ErrInvalidProperty naming the column", name, err)
		}
	}
	p, cdf, err := ApplyPropertyChange(legacy12, propsMetadata(), PropertyChange{Set: on})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = AddColumns(p, cdf, []NewColumn{{Path: []string{"_change_type"}, Type: Primitive(TypeString)}})
	if !errors.Is(err, ErrInvalidProperty) || !strings.Contains(err.Error(), "_change_type") {
		t.Fatalf("ADD COLUMN _change_type on a change-data-feed table: %v", err)
	}
	if _, _, err := AddColumns(legacy12, propsMetadata(), []NewColumn{{Path: []string{"_change_type"}, Type: Primitive(TypeString)}}); err != nil {
		t.Fatalf("without the change data feed the name is free: %v", err)
	}
}

// TestCommitChangeFiles: cdc actions are committed after the adds, read back from
// the commit, never kept by snapshots; they need the changeDataFeed feature and
// dataChange=false.
func TestCommitChangeFiles(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	md := testMetadata()
	md.Configuration[PropEnableChangeDataFeed] = "true"
	if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, []*Add{newAdd("a.parquet", 3)}, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	txn := snap.NewTransaction(TxnOptions{})
	txn.Remove(snap.Files()[0].RemoveAction(1, true))
	txn.Add(newAdd("b.parquet", 2))
	txn.AddChangeFiles(&CDC{Path: "_change_data/cdc-00001-x.c000.zstd.parquet", PartitionValues: map[string]*string{}, Size: 10})
	v, err := txn.Commit(ctx, CommitInfo{Operation: "DELETE"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := l.ScanCommits(ctx, v, v, func(c *CommitScan) error {
		if c.ModTime.IsZero() {
			t.Error("commit scan without the file's modification time")
		}
		for _, a := range c.Actions {
			switch {
			case a.Remove != nil:
				got = append(got, "remove")
			case a.Add != nil:
				got = append(got, "add")
			case a.CDC != nil:
				got = append(got, "cdc")
				if a.CDC.DataChange {
					t.Error("cdc with dataChange=true")
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "remove,add,cdc" {
		t.Fatalf("actions %v", got)
	}
	snap, err = l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files()) != 1 || snap.Files()[0].Path != "b.parquet" {
		t.Fatalf("snapshot files %v", snap.Files())
	}
	// Without the feature, and with dataChange=true, the commit is refused.
	plain := New(memStore())
	createTable(t, plain, nil)
	ps, _ := plain.Snapshot(ctx, -1)
	bad := ps.NewTransaction(TxnOptions{})
	bad.AddChangeFiles(&CDC{Path: "_change_data/c.parquet", PartitionValues: map[string]*string{}, Size: 1})
	if _, err := bad.Commit(ctx, CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) {
		t.Fatalf("cdc on a table without changeDataFeed: %v", err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	bad = snap.NewTransaction(TxnOptions{})
	bad.AddChangeFiles(&CDC{Path: "_change_data/c.parquet", PartitionValues: map[string]*string{}, Size: 1, DataChange: true})
	if _, err := bad.Commit(ctx, CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) {
		t.Fatalf("cdc with dataChange=true: %v", err)
	}
}
