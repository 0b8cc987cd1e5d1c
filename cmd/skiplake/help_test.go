package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpCoversEveryCommand checks the contract of "Adding a command" in main.go for
// every registered command: help, --help and -h print the same text to stdout with
// exit status 0, the text names every declared flag, the synopsis shows every flag,
// and every example's flags parse.
func TestHelpCoversEveryCommand(t *testing.T) {
	require.NotEmpty(t, commands)
	for _, c := range sortedCommands() {
		t.Run(c.name, func(t *testing.T) {
			fs, err := commandFlags(c)
			require.NoError(t, err)
			code, help, errs := cli(t, "help", c.name)
			require.Equal(t, 0, code, errs)
			require.Empty(t, errs)
			require.True(t, strings.HasPrefix(help, "usage: skiplake "+c.name+" "), help)
			for _, h := range []string{"--help", "-h"} {
				code, out, errs := cli(t, c.name, h)
				require.Equal(t, 0, code, errs)
				require.Equal(t, help, out, "%s %s", c.name, h)
			}
			fs.VisitAll(func(f *flag.Flag) {
				require.Contains(t, help, "\n  --"+f.Name, "help of %s lists --%s", c.name, f.Name)
				_, inSynopsis := synopsisPlaceholder(c.usage, f.Name)
				require.True(t, inSynopsis, "the synopsis of %s shows --%s", c.name, f.Name)
			})
			require.NotEmpty(t, c.examples, "%s has an example", c.name)
			for _, ex := range c.examples {
				words, err := shellWords(ex)
				require.NoError(t, err, ex)
				i := indexOf(words, "skiplake")
				require.True(t, i >= 0 && i+1 < len(words) && words[i+1] == c.name, "example %q runs skiplake %s", ex, c.name)
				args := words[i+2:]
				if k := indexOf(args, "|"); k >= 0 {
					args = args[:k]
				}
				_, err = commandFlags(c, args...)
				require.NoError(t, err, "the flags of example %q parse", ex)
			}
		})
	}
}

func TestHelpErrors(t *testing.T) {
	code, out, errs := cli(t, "help")
	require.Equal(t, 0, code)
	require.Empty(t, errs)
	for _, c := range commands {
		require.Contains(t, out, "\n  "+c.name+" ")
	}
	code, out, errs = cli(t, "help", "nope")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errs, `unknown command "nope"`)
	code, _, errs = cli(t, "help", "scan", "extra")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "at most one COMMAND")
	code, out, errs = cli(t)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errs, "usage: skiplake COMMAND")
}

func TestSynopsisPlaceholder(t *testing.T) {
	usage := `TABLE (--schema-from FILE.parquet | --schema "id bigint, ts timestamp") [--partition-by c1,c2] [--force] [--format table|json] --limit N`
	for _, c := range []struct{ name, want string }{
		{"schema-from", "FILE.parquet"},
		{"schema", `"id bigint, ts timestamp"`},
		{"partition-by", "c1,c2"},
		{"force", ""},
		{"format", "table|json"},
		{"limit", "N"},
	} {
		got, ok := synopsisPlaceholder(usage, c.name)
		require.True(t, ok, c.name)
		require.Equal(t, c.want, got, c.name)
	}
	_, ok := synopsisPlaceholder(usage, "partition")
	require.False(t, ok, "a prefix of a longer flag name is not the flag")
}

func TestFlagDefault(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("format", "table", "")
	fs.String("empty", "", "")
	fs.Int("n", 0, "")
	fs.Int("m", 5, "")
	fs.Bool("b", false, "")
	var l listFlag
	fs.Var(&l, "list", "")
	fs.Var(kvFlag{}, "kv", "")
	want := map[string]string{"format": `"table"`, "empty": "", "n": "", "m": "5", "b": "", "list": "", "kv": ""}
	for name, def := range want {
		require.Equal(t, def, flagDefault(fs.Lookup(name)), name)
	}
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// shellWords splits a command line as a POSIX shell would for the quoting the
// examples use: single quotes, double quotes (with backslash escapes) and spaces.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errUnterminated
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errUnterminated
			}
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var errUnterminated = usagef("unterminated quote")
