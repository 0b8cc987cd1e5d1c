package table_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// requestsTable makes a table of nfiles files on a counting in-memory store; file i
// holds ids i*1000 .. i*1000+999, so "id = i*1000+5" keeps exactly file i.
func requestsTable(t *testing.T, nfiles int) (*table.Table, *storage.Counting) {
	t.Helper()
	ctx := context.Background()
	st := storage.NewCounting(storage.NewMemory())
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < nfiles; i++ {
		base := int64(i * 1000)
		rec := layoutBatch(r, 1000, func(j int) int64 { return base + int64(j) }, 0.1)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	return tb, st
}

// readReport reads the scan to the end and returns the rows and the Reader's report.
func readReport(t *testing.T, ctx context.Context, sc *table.Scan) (int64, *table.ScanReport) {
	t.Helper()
	rd, err := sc.Read(ctx)
	require.NoError(t, err)
	var n int64
	for rd.Next() {
		n += rd.RecordBatch().NumRows()
	}
	require.NoError(t, rd.Err())
	rd.Release()
	return n, rd.Report()
}

// TestScanReportCountsTheScansRequests: on a store that counts requests, every
// ScanReport carries the requests of loading the snapshot and of the scan itself,
// equal to what the store counted over the same calls, and skipping shows in them (a
// filter that keeps one file opens one file).
func TestScanReportCountsTheScansRequests(t *testing.T) {
	const nfiles = 8
	ctx := context.Background()
	tb, st := requestsTable(t, nfiles)

	mark := st.Requests()
	since := func() storage.RequestCounts {
		now := st.Requests()
		d := now.Sub(mark)
		mark = now
		return d
	}

	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	load := since()
	require.Positive(t, load.LIST, "loading a snapshot lists the log")
	require.Positive(t, load.GET, "loading a snapshot reads commits")

	sc, err := snap.Scan(ctx, table.WithFilter("id = 3005"))
	require.NoError(t, err)
	plan := since()
	rep := sc.Report()
	require.NotNil(t, rep.Requests)
	require.Equal(t, plan, *rep.Requests, "planning")
	require.NotNil(t, rep.SnapshotRequests)
	require.Equal(t, load, *rep.SnapshotRequests, "snapshot load")

	ex, err := sc.Explain(ctx)
	require.NoError(t, err)
	explain := since()
	require.Equal(t, plan.Add(explain), *ex.Requests, "explain: planning + footers")
	require.Equal(t, int64(1), explain.HEAD, "explain opens the one file the filter keeps")
	require.Positive(t, explain.GET)
	require.Equal(t, load, *ex.SnapshotRequests)

	n, rr := readReport(t, ctx, sc)
	read := since()
	require.Equal(t, int64(1), n)
	require.Equal(t, plan.Add(read), *rr.Requests, "reader: planning + reads")
	require.Equal(t, int64(1), read.HEAD, "the reader opens one file")

	cnt, cr, err := sc.Count(ctx)
	require.NoError(t, err)
	count := since()
	require.Equal(t, int64(1), cnt)
	require.Equal(t, plan.Add(count), *cr.Requests, "count: planning + reads")

	// Without a filter every file is opened: skipping is what saved the rest.
	full, err := snap.Scan(ctx)
	require.NoError(t, err)
	n, fr := readReport(t, ctx, full)
	fullReq := since()
	require.Equal(t, int64(nfiles*1000), n)
	require.Equal(t, fullReq, *fr.Requests)
	require.Equal(t, int64(nfiles), fr.Requests.HEAD)
	require.Greater(t, fr.Requests.BytesRead, rr.Requests.BytesRead)

	// The reports' JSON carries both.
	js, err := json.Marshal(ex)
	require.NoError(t, err)
	var decoded struct {
		Requests         *storage.RequestCounts `json:"requests"`
		SnapshotRequests *storage.RequestCounts `json:"snapshotRequests"`
	}
	require.NoError(t, json.Unmarshal(js, &decoded))
	require.Equal(t, ex.Requests, decoded.Requests)
	require.Equal(t, ex.SnapshotRequests, decoded.SnapshotRequests)
	require.Contains(t, string(js), `"requests":{"get":`)
}

// TestScanReportRequestsOfConcurrentScans: scans running at once on one table each
// count only their own requests: each report equals the same scan's report run alone,
// and together they account for every request the store counted.
func TestScanReportRequestsOfConcurrentScans(t *testing.T) {
	const nfiles = 6
	ctx := context.Background()
	tb, st := requestsTable(t, nfiles)
	// Without the footer cache every run of a scan makes the same requests (with it,
	// only the first run reads the footers: TestSecondScanReadsNoFooter).
	tb = tb.WithCache(table.CacheOptions{FooterBytes: -1})
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	filters := []string{"", "id = 5", "id >= 2000 AND id < 4000", "id = 5005", "id > 100000"}

	scanOnce := func(filter string) storage.RequestCounts {
		var opts []table.ScanOption
		if filter != "" {
			opts = append(opts, table.WithFilter(filter))
		}
		sc, err := snap.Scan(ctx, opts...)
		if err != nil {
			panic(err)
		}
		rd, err := sc.Read(ctx)
		if err != nil {
			panic(err)
		}
		for rd.Next() {
		}
		if err := rd.Err(); err != nil {
			panic(err)
		}
		rd.Release()
		return *rd.Report().Requests
	}
	alone := make([]storage.RequestCounts, len(filters))
	for i, f := range filters {
		before := st.Requests()
		alone[i] = scanOnce(f)
		require.Equal(t, st.Requests().Sub(before), alone[i], "filter %q alone", f)
	}

	const rounds = 4
	before := st.Requests()
	got := make([][]storage.RequestCounts, rounds)
	var wg sync.WaitGroup
	for r := 0; r < rounds; r++ {
		got[r] = make([]storage.RequestCounts, len(filters))
		for i, f := range filters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[r][i] = scanOnce(f)
			}()
		}
	}
	wg.Wait()
	var sum storage.RequestCounts
	for r := range got {
		for i, f := range filters {
			require.Equal(t, alone[i], got[r][i], "round %d, filter %q", r, f)
			sum = sum.Add(got[r][i])
		}
	}
	require.Equal(t, st.Requests().Sub(before), sum, "the reports account for every request")
}

// TestScanReportWithoutRequestCounting: a plain local directory counts no requests,
// and the report (and its JSON) says nothing about them.
func TestScanReportWithoutRequestCounting(t *testing.T) {
	ctx := context.Background()
	tb, err := table.CreateURL(ctx, t.TempDir(), layoutSchema(), table.CreateOptions{})
	require.NoError(t, err)
	rec := layoutBatch(rand.New(rand.NewPCG(1, 1)), 100, func(j int) int64 { return int64(j) }, 0)
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	_, ok := tb.RequestCounts()
	require.False(t, ok)

	sc, err := tb.Scan(ctx, table.WithFilter("id = 5"))
	require.NoError(t, err)
	ex, err := sc.Explain(ctx)
	require.NoError(t, err)
	_, rr := readReport(t, ctx, sc)
	for name, rep := range map[string]*table.ScanReport{"plan": sc.Report(), "explain": ex, "reader": rr} {
		require.Nil(t, rep.Requests, name)
		require.Nil(t, rep.SnapshotRequests, name)
		js, err := json.Marshal(rep)
		require.NoError(t, err)
		require.False(t, strings.Contains(string(js), "equests"), fmt.Sprintf("%s: %s", name, js))
	}
}
