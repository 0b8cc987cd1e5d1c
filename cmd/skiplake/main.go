// Command skiplake reads, writes and maintains Delta Lake tables with data skipping.
//
// Usage: skiplake COMMAND TABLE [flags]. Run "skiplake help" for the commands and
// "skiplake help COMMAND" (or "skiplake COMMAND --help") for one command's flags. Errors
// go to stderr with a non-zero exit status (1 refused, 2 usage, 75 temporary: see
// status.go); output formats are stable for scripts (testdata/cli, docs/cli.md).
//
// # Adding a command
//
// A command is one register call in an init function of its own file:
//
//	func init() {
//		register(&command{name: "count", usage: "TABLE [--filter EXPR] [--format text|json]",
//			summary:  "count the rows of a table version that match a filter",
//			examples: []string{`skiplake count /tmp/t --filter "country = 'JP'"`},
//			run:      runCount})
//	}
//
//	func runCount(ctx context.Context, e *env, args []string) error {
//		fs := flag.NewFlagSet("count", flag.ContinueOnError)
//		filter := fs.String("filter", "", "predicate; only rows matching it are counted")
//		path, err := tableArgs(fs, args, ...) // or parseArgs(fs, args): FIRST, before any work
//		...
//	}
//
// The run function is the one place a command's flags are declared: help uses it too.
// "skiplake help NAME", "NAME --help" and "NAME -h" call run with a help flag and an
// already cancelled context; parseArgs (which tableArgs calls) then returns a
// *helpRequest carrying the declared FlagSet instead of parsing, and run prints the
// synopsis, the summary, every flag with its default, and the examples. So a command
// must parse its arguments with parseArgs or tableArgs before it touches anything.
// In usage, write each flag as "--name PLACEHOLDER" (or "--name" for a boolean): help
// takes a flag's placeholder from there. TestHelpCoversEveryCommand checks that every
// command answers --help, that its synopsis names every flag, that it has an example
// whose flags parse, and docs/cli.md (TestCLIReference) must hold its help text:
// `go test ./cmd/skiplake -run 'TestCLIReference|TestGoldenOutputs' -update` regenerates
// both from the code; review the diff.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skiplake/skiplake/table"
)

// command is one subcommand: it parses its own flags and returns an error; only main exits.
type command struct {
	name     string
	usage    string // argument synopsis: positionals and every flag as --name PLACEHOLDER
	summary  string // one line, lower case, for the command list and help
	details  string // optional paragraphs help prints after the summary (exit statuses, ...)
	examples []string
	run      func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch: its streams (tests substitute buffers).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// terminal reports whether stderr is a terminal (progress bars only then).
	terminal bool
	// progressInterval is how often progress lines are printed when stderr is not
	// a terminal (0: progress.DefaultLineInterval; tests shorten it).
	progressInterval time.Duration

	// command is the running command's name, for warnings (set by run).
	command string
	// warnMu guards warned, the warnings already printed (each once per invocation).
	warnMu sync.Mutex
	warned map[string]bool
}

// openTable opens the table at path (table.OpenURL) and prints to stderr the warnings
// its log raises while the command reads it (a checkpoint skipped because it cannot
// be read: the answer is right, reading was slower, the checkpoint wants rewriting).
func (e *env) openTable(ctx context.Context, path string) (*table.Table, error) {
	t, err := table.OpenURL(ctx, path)
	if t != nil {
		t.ObserveWarnings(e.warn)
	}
	return t, err
}

// warn prints msg to stderr as a warning of the running command, once per invocation.
func (e *env) warn(msg string) {
	e.warnMu.Lock()
	defer e.warnMu.Unlock()
	if e.warned[msg] {
		return
	}
	if e.warned == nil {
		e.warned = map[string]bool{}
	}
	e.warned[msg] = true
	fmt.Fprintf(e.stderr, "skiplake %s: warning: %s (run 'skiplake checkpoint TABLE' to write a new checkpoint)\n", e.command, msg)
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

// usageError marks errors caused by bad invocation (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// helpRequest is what parseArgs returns for -h, -help or --help: the command's
// declared flags, which run prints with the command's synopsis and examples.
type helpRequest struct{ fs *flag.FlagSet }

func (h *helpRequest) Error() string { return "help requested" }

// exitStatus is returned by a command that did its work but must exit with a
// particular status a monitor can act on (maintain: work remains, a task failed);
// msg, when not empty, goes to stderr.
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, terminal: isTerminal(os.Stderr)}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// run executes one invocation and returns the exit status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		printUsage(e.stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		switch {
		case len(args) == 1:
			printUsage(e.stdout)
			return 0
		case len(args) > 2:
			fmt.Fprintf(e.stderr, "skiplake help: want at most one COMMAND, got %d arguments\nusage: skiplake help [COMMAND]\n", len(args)-1)
			return 2
		}
		if args[1] == "help" {
			fmt.Fprintln(e.stdout, "usage: skiplake help [COMMAND]\n\nList the commands, or print one command's synopsis, flags with their defaults, and examples.")
			return 0
		}
		c := lookup(args[1])
		if c == nil {
			fmt.Fprintf(e.stderr, "skiplake help: unknown command %q\n", args[1])
			printUsage(e.stderr)
			return 2
		}
		if err := printHelp(e.stdout, c); err != nil {
			fmt.Fprintf(e.stderr, "skiplake help: %v\n", err)
			return 1
		}
		return 0
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(e.stderr, "skiplake: unknown command %q\n", args[0])
		printUsage(e.stderr)
		return 2
	}
	// Nothing a command prints on stderr may show a credential of its arguments.
	// The caller's env is left as it is (a test may run several commands on it).
	e = &env{
		stdin: e.stdin, stdout: e.stdout, stderr: newRedactor(args).writer(e.stderr),
		terminal: e.terminal, progressInterval: e.progressInterval,
		command: c.name,
	}
	if err := c.run(ctx, e, args[1:]); err != nil {
		var ue *usageError
		var hr *helpRequest
		var es *exitStatus
		switch {
		case errors.As(err, &es):
			if es.msg != "" {
				fmt.Fprintf(e.stderr, "skiplake %s: %s\n", c.name, es.msg)
			}
			return es.code
		case errors.As(err, &hr):
			writeHelp(e.stdout, c, hr.fs)
			return 0
		case errors.As(err, &ue):
			fmt.Fprintf(e.stderr, "skiplake %s: %s\nusage: skiplake %s %s\n(run 'skiplake help %s' for the flags)\n", c.name, ue.msg, c.name, c.usage, c.name)
			return exitUsage
		}
		// "skiplake optimize: optimize: ..." says the component twice.
		fmt.Fprintf(e.stderr, "skiplake %s: %s\n", c.name, strings.TrimPrefix(err.Error(), c.name+": "))
		return exitCode(err) // 1, or 75 for a failure that may not recur (status.go)
	}
	return 0
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func sortedCommands() []*command {
	sorted := append([]*command(nil), commands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	return sorted
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: skiplake COMMAND TABLE [flags]\n\ncommands:")
	for _, c := range sortedCommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  help       show a command's flags, defaults and examples: skiplake help COMMAND")
	fmt.Fprintln(w, "\nTABLE is a path or a URL (s3://, gs://, azblob://, file://). Exit status: 0 success,\n1 failure that retrying cannot fix, 2 usage error, 75 temporary failure (a commit\nconflict, a storage or network error, a timeout): retry later; maintain adds 3 and 4\n(see 'skiplake help maintain'). Run 'skiplake help COMMAND' for a command's flags.")
}

// commandFlags returns the flags c declares, by running it with -h under a cancelled
// context (see "Adding a command" above); nil when c does not parse flags.
func commandFlags(c *command, extra ...string) (*flag.FlagSet, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	discard := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	err := c.run(ctx, discard, append(extra, "--help"))
	var hr *helpRequest
	if errors.As(err, &hr) {
		return hr.fs, nil
	}
	if err == nil {
		err = errors.New("it ignored --help")
	}
	return nil, fmt.Errorf("command %s does not declare its flags through parseArgs: %w", c.name, err)
}

func printHelp(w io.Writer, c *command) error {
	fs, err := commandFlags(c)
	if err != nil {
		return err
	}
	writeHelp(w, c, fs)
	return nil
}

// writeHelp prints a command's synopsis, summary, flags (with their placeholders
// from the synopsis and their defaults) and examples.
func writeHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: skiplake %s %s\n\n%s\n", c.name, c.usage, upperFirst(c.summary))
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	if len(flags) > 0 {
		fmt.Fprintln(w, "\nflags:")
	}
	for _, f := range flags {
		line := "  --" + f.Name
		if ph := flagPlaceholder(c.usage, f); ph != "" {
			line += " " + ph
		}
		if def := flagDefault(f); def != "" {
			line += "  (default " + def + ")"
		}
		fmt.Fprintln(w, line)
		for _, l := range wrap(f.Usage, 84) {
			fmt.Fprintln(w, "      "+l)
		}
	}
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, ex := range c.examples {
			fmt.Fprintln(w, "  "+ex)
		}
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// isBoolFlag reports whether f takes no value (--force rather than --force=true).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagPlaceholder is the word after --NAME in the synopsis (a quoted phrase counts as
// one word): "EXPR" for "[--filter EXPR]", "table|json" for "--format table|json".
// A boolean flag has none; a flag the synopsis does not show gets "VALUE".
func flagPlaceholder(usage string, f *flag.Flag) string {
	if isBoolFlag(f) {
		return ""
	}
	if ph, ok := synopsisPlaceholder(usage, f.Name); ok && ph != "" {
		return ph
	}
	return "VALUE"
}

// synopsisPlaceholder finds "--name" in a synopsis and returns the word after it.
func synopsisPlaceholder(usage, name string) (string, bool) {
	tok := "--" + name
	for i := 0; ; {
		j := strings.Index(usage[i:], tok)
		if j < 0 {
			return "", false
		}
		j += i + len(tok)
		i = j
		if j < len(usage) && (usage[j] == '-' || usage[j] == '_' || isAlnum(usage[j])) {
			continue // --name is a prefix of a longer flag name
		}
		if j >= len(usage) || usage[j] != ' ' {
			return "", true
		}
		rest := usage[j+1:]
		if strings.HasPrefix(rest, `"`) {
			if k := strings.IndexByte(rest[1:], '"'); k >= 0 {
				return rest[:k+2], true
			}
		}
		end := strings.IndexAny(rest, " ])")
		if end < 0 {
			end = len(rest)
		}
		word := rest[:end]
		if word == "" || strings.HasPrefix(word, "-") || word == "|" || strings.HasPrefix(word, "[") || strings.HasPrefix(word, "(") {
			return "", true
		}
		return word, true
	}
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// flagDefault is a flag's default as help shows it; empty when the default is the
// type's zero value (whose meaning the flag's usage text states).
func flagDefault(f *flag.Flag) string {
	if isBoolFlag(f) && f.DefValue == "false" {
		return ""
	}
	t := reflect.TypeOf(f.Value)
	var zero flag.Value
	if t.Kind() == reflect.Pointer {
		zero = reflect.New(t.Elem()).Interface().(flag.Value)
	} else {
		zero = reflect.Zero(t).Interface().(flag.Value)
	}
	if f.DefValue == zero.String() {
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}

// wrap splits s into lines of at most width bytes at spaces.
func wrap(s string, width int) []string {
	var lines []string
	for len(s) > width {
		cut := strings.LastIndexByte(s[:width+1], ' ')
		if cut <= 0 {
			if cut = strings.IndexByte(s, ' '); cut < 0 {
				break
			}
		}
		lines = append(lines, s[:cut])
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(lines, s)
}

// parseArgs parses flags that may appear before, between or after positional
// arguments (skiplake scan TABLE --filter ...), returning the positionals. -h, -help
// and --help return a *helpRequest (see "Adding a command" above).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpRequest{fs: fs}
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// shellQuote quotes s for a POSIX shell when it needs quoting (for command lines
// the CLI suggests).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,=:%+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// listFlag collects a comma-separated list, repeatable.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// kvFlag collects repeated key=value pairs.
type kvFlag map[string]string

func (m kvFlag) String() string { return "" }
func (m kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	m[strings.TrimSpace(k)] = v
	return nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("CI") == ""
}

// tableArgs parses a command's flags, requires exactly one TABLE argument and checks
// that the parsed --format value is one of formats (the shape of most commands).
func tableArgs(fs *flag.FlagSet, args []string, format *string, formats ...string) (string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", err
	}
	path, err := oneTable(pos)
	if err != nil {
		return "", err
	}
	if err := checkFormat(*format, formats...); err != nil {
		return "", err
	}
	return path, nil
}

// writeJSONL writes one JSON document per line (the jsonl output format).
func writeJSONL[T any](w io.Writer, items []T) error {
	bw := bufio.NewWriterSize(w, 64<<10) // one Write per 64 KiB, not per item
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeJSON writes v as one indented JSON document (the json output format).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // filters hold < and >: print them as written
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
