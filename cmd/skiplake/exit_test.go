package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// racingStores maps the host of a racetest:// location to the local directory it
// serves (see racingStore).
var racingStores sync.Map

func init() {
	storage.Register("racetest", func(ctx context.Context, u *url.URL, create bool) (storage.Storage, error) {
		dir, ok := racingStores.Load(u.Host)
		if !ok {
			return nil, fmt.Errorf("racetest: unknown store %q", u.Host)
		}
		st, err := storage.NewLocal(dir.(string))
		if err != nil {
			return nil, err
		}
		return &racingStore{Storage: st}, nil
	})
}

// racingStore is a local table in which another writer always wins: just before each
// commit file is created, it creates that version itself with a commit that changes
// the table's metadata (a property), so the command's commit finds the version taken
// by a conflicting winner, as a concurrent ALTER would make it.
type racingStore struct {
	storage.Storage
	mu sync.Mutex
}

var commitFileRE = regexp.MustCompile(`^_delta_log/(\d{20})\.json$`)

func (s *racingStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if m := commitFileRE.FindStringSubmatch(p); m != nil {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		if v > 0 {
			s.mu.Lock()
			err := s.win(ctx, v)
			s.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	return s.Storage.PutIfAbsent(ctx, p, data)
}

// win commits version v with a metadata change, unless it exists.
func (s *racingStore) win(ctx context.Context, v int64) error {
	if _, err := s.Storage.Stat(ctx, log.CommitPath(v)); err == nil {
		return nil
	}
	snap, err := log.New(s.Storage).Snapshot(ctx, v-1)
	if err != nil {
		return err
	}
	md := snap.Metadata()
	conf := map[string]string{}
	for k, val := range md.Configuration {
		conf[k] = val
	}
	conf["racetest.winner"] = strconv.FormatInt(v, 10)
	md.Configuration = conf
	data, err := log.MarshalActions([]log.Action{
		{CommitInfo: &log.CommitInfo{Timestamp: time.Now().UnixMilli(), Operation: "SET TBLPROPERTIES"}},
		{Metadata: &md},
	})
	if err != nil {
		return err
	}
	return s.Storage.PutIfAbsent(ctx, log.CommitPath(v), data)
}

// TestExitStatuses: every command exits 2 on a usage error, 1 when the table, the
// data or the request is refused (retrying cannot help), and 75 (EX_TEMPFAIL) when
// the failure may not recur: a storage failure (an unreachable S3 endpoint) and, for
// the commands that commit, a commit that lost to a conflicting concurrent commit
// (issue 28 item 5). Nothing here needs a server: the endpoint refuses connections,
// and the conflict comes from a store in which another writer always wins.
func TestExitStatuses(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "1") // one refused connection is enough
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXITTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "exit-test-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	dir := t.TempDir()
	src := goldenTable(t, dir)
	in := filepath.Join(dir, "more.csv")
	require.NoError(t, os.WriteFile(in, []byte("id,country\n100,DE\n101,JP\n"), 0o644))
	badIn := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(badIn, []byte("id,nosuch\n1,2\n"), 0o644))
	queries := filepath.Join(dir, "q.sql")
	require.NoError(t, os.WriteFile(queries, []byte("id = 3\ncountry = 'DE'\n"), 0o644))
	badQueries := filepath.Join(dir, "bad.sql")
	require.NoError(t, os.WriteFile(badQueries, []byte("nosuch = 3\n"), 0o644))
	empty := t.TempDir()

	// A fresh copy of the table for each case that writes.
	copies := 0
	fresh := func(t *testing.T) string {
		copies++
		dst := filepath.Join(dir, fmt.Sprintf("copy%d", copies))
		require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
		return dst
	}
	racing := func(t *testing.T) string {
		d := fresh(t)
		host := fmt.Sprintf("race%d", copies)
		racingStores.Store(host, d)
		return "racetest://" + host + "/"
	}
	const unreachable = "s3://bucket/t?endpoint=http://127.0.0.1:1&use_path_style=true"

	// args builds the command line for a table location; validation makes the
	// command refuse its input.
	type command struct {
		args       func(tbl string) []string
		validation func(tbl string) []string
		commits    bool // a concurrent conflicting commit can make it fail
	}
	cmds := map[string]command{
		"advise": {args: func(t string) []string { return []string{"advise", t, "--queries", queries} },
			validation: func(t string) []string { return []string{"advise", t, "--queries", badQueries} }},
		"alter": {args: func(t string) []string { return []string{"alter", t, "--set-property", "delta.appendOnly=false"} },
			validation: func(t string) []string { return []string{"alter", t, "--add-column", "id bigint"} }, commits: true},
		"append": {args: func(t string) []string { return []string{"append", t, in} },
			validation: func(t string) []string { return []string{"append", t, badIn} }, commits: true},
		// The table has no change data feed: reading from the version after the
		// latest succeeds with nothing, reading its versions is refused.
		"changes": {args: func(t string) []string { return []string{"changes", t, "--from", "3"} },
			validation: func(t string) []string { return []string{"changes", t, "--from", "0"} }},
		"checkpoint": {args: func(t string) []string { return []string{"checkpoint", t} },
			validation: func(string) []string { return []string{"checkpoint", empty} }},
		"count": {args: func(t string) []string { return []string{"count", t, "--filter", "id > 0"} },
			validation: func(t string) []string { return []string{"count", t, "--filter", "nosuch > 0"} }},
		"create": {args: func(t string) []string { return []string{"create", newLocation(t), "--schema", "id bigint"} },
			validation: func(t string) []string { return []string{"create", t, "--schema", "id bigint"} }},
		"delete": {args: func(t string) []string { return []string{"delete", t, "--where", "id = 1"} },
			validation: func(t string) []string { return []string{"delete", t, "--where", "nosuch = 1"} }, commits: true},
		"describe": {args: func(t string) []string { return []string{"describe", t} },
			validation: func(t string) []string { return []string{"describe", t, "--version", "99"} }},
		"explain": {args: func(t string) []string { return []string{"explain", t, "--filter", "id = 1"} },
			validation: func(t string) []string { return []string{"explain", t, "--filter", "nosuch = 1"} }},
		"files": {args: func(t string) []string { return []string{"files", t, "--filter", "id = 1"} },
			validation: func(t string) []string { return []string{"files", t, "--filter", "nosuch = 1"} }},
		"history": {args: func(t string) []string { return []string{"history", t} },
			validation: func(string) []string { return []string{"history", empty} }},
		"maintain": {args: func(t string) []string { return []string{"maintain", t} },
			validation: func(string) []string { return []string{"maintain", empty} }},
		"merge": {args: func(t string) []string { return []string{"merge", t, in, "--on", "id"} },
			validation: func(t string) []string { return []string{"merge", t, in, "--on", "nosuch"} }, commits: true},
		"optimize": {args: func(t string) []string { return []string{"optimize", t, "--quiet"} },
			validation: func(t string) []string { return []string{"optimize", t, "--zorder-by", "nosuch"} }, commits: true},
		"restore": {args: func(t string) []string { return []string{"restore", t, "--version", "0"} },
			validation: func(t string) []string { return []string{"restore", t, "--version", "99"} }, commits: true},
		"scan": {args: func(t string) []string { return []string{"scan", t} },
			validation: func(t string) []string { return []string{"scan", t, "--columns", "nosuch"} }},
		"update": {args: func(t string) []string { return []string{"update", t, "--set", "country = 'XX'", "--where", "id = 1"} },
			validation: func(t string) []string { return []string{"update", t, "--set", "nosuch = 1"} }, commits: true},
		"vacuum": {args: func(t string) []string { return []string{"vacuum", t} },
			validation: func(t string) []string { return []string{"vacuum", t, "--retain", "1h"} }},
	}
	// Commands that take no table: only usage errors apply.
	noTable := map[string]bool{"bench": true, "version": true}

	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			check := func(what string, want int, args []string) {
				t.Helper()
				code, _, errs := cli(t, args...)
				require.Equal(t, want, code, "%s: skiplake %s\nstderr: %s", what, strings.Join(args, " "), errs)
				require.Contains(t, errs, "skiplake "+name+":", what)
			}
			check("usage error", exitUsage, []string{name, "--no-such-flag"})
			if noTable[name] {
				return
			}
			c, ok := cmds[name]
			require.True(t, ok, "TestExitStatuses has no cases for command %q", name)
			check("storage failure", exitTempFail, c.args(unreachable))
			check("validation error", exitRefused, c.validation(fresh(t)))
			if c.commits {
				check("commit conflict", exitTempFail, c.args(racing(t)))
			}
			code, _, errs := cli(t, c.args(fresh(t))...)
			require.Contains(t, []int{exitOK}, code, "the same command without the failure: %s", errs)
		})
	}
}

// newLocation returns a location beside the table at loc (a path, or a URL whose path
// gets a suffix).
func newLocation(loc string) string {
	if i := strings.IndexByte(loc, '?'); i >= 0 {
		return loc[:i] + "-new" + loc[i:]
	}
	return loc + "-new"
}

// exitCode in isolation: the sentinels and library errors it classifies.
func TestExitCodeClassification(t *testing.T) {
	_, enoent := os.Stat(filepath.Join(t.TempDir(), "missing"))
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"usage", usagef("bad flag"), exitUsage},
		{"missing local file", enoent, exitRefused},
		{"corrupt data", fmt.Errorf("table: %w", table.ErrCorruptData), exitRefused},
		{"missing data file", fmt.Errorf("%w: x.parquet", table.ErrMissingDataFile), exitRefused},
		{"schema mismatch", fmt.Errorf("%w: column", table.ErrSchemaMismatch), exitRefused},
		{"unsupported feature", &log.UnsupportedFeatureError{Features: []string{"x"}, Reader: true}, exitRefused},
		{"storage transient", fmt.Errorf("storage: get: %w: reset", storage.ErrTransient), exitTempFail},
		{"data file read failed in transit", &datafile.ReadError{File: "f", Err: fmt.Errorf("%w: cut", storage.ErrTransient)}, exitTempFail},
		{"conflict", &log.ConflictError{Kind: log.ErrConcurrentDeleteRead, Version: 3}, exitTempFail},
		{"too many retries", fmt.Errorf("log: %w", log.ErrTooManyRetries), exitTempFail},
		{"commit outcome unknown", fmt.Errorf("log: %w", log.ErrCommitUnknown), exitTempFail},
		{"timeout", fmt.Errorf("table: %w", context.DeadlineExceeded), exitTempFail},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, exitTempFail},
		{"disk full", &os.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}, exitTempFail},
		{"permission denied", &os.PathError{Op: "open", Path: "f", Err: syscall.EACCES}, exitRefused},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}
