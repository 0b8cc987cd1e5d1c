package table_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// TestClusteringDomainOverTheLimitRefused: a clustering domain naming 10,000 columns
// (a damaged or foreign log) is refused when it is read, naming the limit; OPTIMIZE
// failed deep inside ranking with "rank: invalid bits: 0".
func TestClusteringDomainOverTheLimitRefused(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, dmlSchema, table.CreateOptions{ClusterBy: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		rec := dmlBatch([]dmlRow{{id: int64(2 * i), grp: sp("a"), qty: ip(1)}, {id: int64(2*i + 1), grp: sp("b"), qty: ip(2)}})
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	cols := make([][]string, 10_000)
	for i := range cols {
		cols[i] = []string{"id"}
	}
	conf, _ := json.Marshal(map[string]any{"clusteringColumns": cols})
	dm, _ := json.Marshal(map[string]any{"domainMetadata": log.DomainMetadata{Domain: log.DomainClustering, Configuration: string(conf)}})
	commit := fmt.Sprintf("{\"commitInfo\":{\"timestamp\":1,\"operation\":\"CLUSTER BY\"}}\n%s\n", dm)
	if err := st.PutIfAbsent(ctx, log.CommitPath(snap.Version()+1), []byte(commit)); err != nil {
		t.Fatal(err)
	}
	_, err = tb.Optimize(ctx, table.OptimizeOptions{})
	if !errors.Is(err, log.ErrInvalidClustering) || !strings.Contains(err.Error(), "10000 columns") || !strings.Contains(err.Error(), "at most 4") {
		t.Fatalf("optimize: %v; want the domain refused, naming the limit", err)
	}
	if _, err := tb.Maintain(ctx, table.MaintainOptions{}); err != nil {
		t.Fatalf("maintain: %v (the table is still readable; the clustering tasks report the domain)", err)
	}
	if n, _, err := tb.Count(ctx); err != nil || n != 6 {
		t.Fatalf("count: %d, %v; reading does not need the clustering columns", n, err)
	}
}
