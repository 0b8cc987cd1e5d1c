package main

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadBuildVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/skiplake/skiplake", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	v := readBuildVersion(bi)
	require.Equal(t, buildVersion{Module: "github.com/skiplake/skiplake", Version: "v0.3.0", Revision: "0123abc", Time: "2026-11-30T10:00:00Z",
		Modified: true, GoVersion: "go1.26.8", Platform: v.Platform}, v)
	none := readBuildVersion(nil)
	require.Equal(t, "unknown", none.Version)
	require.Empty(t, none.Revision)
}

func TestVersionCommand(t *testing.T) {
	code, out, errs := cli(t, "version")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	require.True(t, strings.HasPrefix(lines[0], "skiplake "), out)
	require.True(t, strings.HasPrefix(lines[1], "revision "), out)
	code, out, errs = cli(t, "version", "--format", "json")
	require.Equal(t, 0, code, errs)
	var v buildVersion
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Equal(t, "github.com/skiplake/skiplake", v.Module)
}
