package log_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

func Example() {
	ctx := context.Background()
	l := log.New(storage.NewMemory())
	md := log.Metadata{
		ID:           "00000000-0000-0000-0000-000000000001",
		SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`,
	}
	add := &log.Add{Path: "part-0.parquet", Size: 512, DataChange: true, Stats: `{"numRecords":3}`}
	if _, err := l.Create(ctx, md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, []*log.Add{add}, log.CommitInfo{}); err != nil {
		fmt.Println(err)
		return
	}

	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		fmt.Println(err)
		return
	}
	tx := snap.NewTransaction(log.TxnOptions{})
	tx.Add(&log.Add{Path: "part-1.parquet", Size: 256, DataChange: true})
	v, err := tx.Commit(ctx, log.CommitInfo{Operation: "WRITE"})
	fmt.Println("committed version", v, err)

	snap, _ = l.Snapshot(ctx, -1)
	for _, f := range snap.Files() {
		fmt.Println(f.Path, f.Size)
	}
	// Output:
	// committed version 1 <nil>
	// part-0.parquet 512
	// part-1.parquet 256
}

func ExampleParseSchema() {
	s, err := log.ParseSchema(`{"type":"struct","fields":[{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},{"name":"amount","type":"decimal(10,2)","nullable":false,"metadata":{}}]}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	as, _ := log.ToArrow(s, log.ArrowOptions{})
	for _, f := range as.Fields() {
		fmt.Println(f.Name, f.Type, f.Nullable)
	}
	// Output:
	// ts timestamp[us, tz=UTC] true
	// amount decimal(10, 2) false
}

func ExampleCheckReadable() {
	err := log.CheckReadable(log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "someFutureFeature"}})
	var ue *log.UnsupportedFeatureError
	fmt.Println(errors.As(err, &ue), ue.Features)
	fmt.Println(err)
	// Output:
	// true [someFutureFeature]
	// log: unsupported reader features: someFutureFeature
}

func ExampleTransaction_Commit_conflict() {
	ctx := context.Background()
	l := log.New(storage.NewMemory())
	md := log.Metadata{ID: "t", SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`}
	_, _ = l.Create(ctx, md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, []*log.Add{{Path: "a.parquet", DataChange: true}}, log.CommitInfo{})
	snap, _ := l.Snapshot(ctx, 0)

	first := snap.NewTransaction(log.TxnOptions{})
	first.Remove(&log.Remove{Path: "a.parquet", DataChange: true})
	_, _ = first.Commit(ctx, log.CommitInfo{Operation: "DELETE"})

	second := snap.NewTransaction(log.TxnOptions{})
	second.Remove(&log.Remove{Path: "a.parquet", DataChange: true})
	_, err := second.Commit(ctx, log.CommitInfo{Operation: "DELETE"})
	var ce *log.ConflictError
	fmt.Println(errors.Is(err, log.ErrConcurrentDeleteDelete), errors.As(err, &ce), ce.Version, ce.Files)
	// Output:
	// true true 1 [a.parquet]
}

func ExampleLog_History() {
	ctx := context.Background()
	l := log.New(storage.NewMemory())
	md := log.Metadata{ID: "t", SchemaString: `{"type":"struct","fields":[]}`}
	_, _ = l.Create(ctx, md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, log.CommitInfo{})
	h, _ := l.History(ctx, 10)
	fmt.Println(len(h), h[0].Version, h[0].Operation, h[0].CommitInfo.IsolationLevel)
	// Output:
	// 1 0 CREATE TABLE Serializable
}
