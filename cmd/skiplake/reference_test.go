package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cliReference is the CLI reference kept in the repository. Between the markers
// <!-- help: NAME --> and <!-- /help --> it holds exactly what "skiplake help NAME"
// prints (<!-- help --> for "skiplake help"); the prose around the blocks is written
// by hand. TestCLIReference fails when a block differs from the code, when a command
// has no block, or when a block names no command; -update rewrites the blocks (and
// appends a section for each command that has none) — review the diff and write the
// prose for new commands.
var cliReference = filepath.Join("..", "..", "docs", "cli.md")

var helpBlockRE = regexp.MustCompile("(?s)<!-- help(?:: ([a-z-]+))? -->\n```text\n(.*?)```\n<!-- /help -->")

// helpText is what "skiplake help [name]" prints.
func helpText(t *testing.T, name string) string {
	t.Helper()
	args := []string{"help"}
	if name != "" {
		args = append(args, name)
	}
	code, out, errs := cli(t, args...)
	require.Equal(t, 0, code, errs)
	return out
}

func helpBlock(name, text string) string {
	marker := "<!-- help -->"
	if name != "" {
		marker = "<!-- help: " + name + " -->"
	}
	return marker + "\n```text\n" + text + "```\n<!-- /help -->"
}

func TestCLIReference(t *testing.T) {
	doc, err := os.ReadFile(cliReference)
	require.NoError(t, err)
	seen := map[string]bool{}
	var problems []string
	updated := helpBlockRE.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := helpBlockRE.FindSubmatch(m)
		name := string(sub[1])
		if name != "" && lookup(name) == nil {
			problems = append(problems, fmt.Sprintf("docs/cli.md documents %q, which is not a command", name))
			return m
		}
		seen[name] = true
		want := helpText(t, name)
		if string(sub[2]) != want {
			problems = append(problems, fmt.Sprintf("docs/cli.md: the help block of %q differs from 'skiplake help %s'", name, name))
		}
		return []byte(helpBlock(name, want))
	})
	if !seen[""] {
		problems = append(problems, "docs/cli.md has no <!-- help --> block for 'skiplake help'")
	}
	for _, c := range sortedCommands() {
		if !seen[c.name] {
			problems = append(problems, fmt.Sprintf("docs/cli.md has no section for command %q", c.name))
			if *updateGolden {
				updated = append(bytes.TrimRight(updated, "\n"), []byte(fmt.Sprintf("\n\n### %s\n\n%s\n\n%s\n", c.name, helpBlock(c.name, helpText(t, c.name)), upperFirst(c.summary)))...)
			}
		}
	}
	if *updateGolden {
		require.NoError(t, os.WriteFile(cliReference, updated, 0o644))
		return
	}
	require.Empty(t, problems, "docs/cli.md is out of date with the code; run go test ./cmd/skiplake -run TestCLIReference -update and review the diff")
}

// TestCLIReferenceMentionsEveryCommandInREADME keeps the README pointing at the reference.
func TestCLIReferenceLinkedFromREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), "docs/cli.md"), "README links docs/cli.md")
}
