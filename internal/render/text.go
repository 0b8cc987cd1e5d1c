package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// csvWriter writes RFC 4180 CSV with a header row. NULL and the empty string are
// told apart the way PostgreSQL's and DuckDB's CSV writers do: NULL is an empty
// unquoted field, the empty string is "" (or NULL is Options.Null, in which case a
// string equal to it is quoted); the strings NULL and null are quoted too.
type csvWriter struct {
	w    *bufio.Writer
	null string
}

func newCSVWriter(w io.Writer, schema *arrow.Schema, opts Options) (*csvWriter, error) {
	c := &csvWriter{w: bufio.NewWriter(w)}
	if opts.Null != nil {
		c.null = *opts.Null
	}
	header := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		header[i] = f.Name
	}
	for i, h := range header {
		c.field(i, h, false)
	}
	return c, c.end()
}

// field writes one field: quoted when it must be (separator, quote, line break,
// leading space, or a value that would read back as NULL).
func (c *csvWriter) field(i int, s string, null bool) {
	if i > 0 {
		c.w.WriteByte(',')
	}
	if null {
		c.w.WriteString(c.null)
		return
	}
	if !c.needsQuotes(s) {
		c.w.WriteString(s)
		return
	}
	c.w.WriteByte('"')
	c.w.WriteString(strings.ReplaceAll(s, `"`, `""`))
	c.w.WriteByte('"')
}

func (c *csvWriter) needsQuotes(s string) bool {
	switch s {
	case "", c.null, "NULL", "null", `\.`:
		// The empty string; NULL's spellings (Options.Null, and those many readers,
		// skiplake append among them, take for NULL when unquoted); PostgreSQL's
		// end-of-data marker.
		return true
	}
	if s[0] == ' ' || s[0] == '\t' {
		return true
	}
	return strings.ContainsAny(s, ",\"\r\n")
}

func (c *csvWriter) end() error {
	_, err := c.w.WriteString("\n")
	return err
}

func (c *csvWriter) Write(rec arrow.RecordBatch) error {
	for r := 0; r < int(rec.NumRows()); r++ {
		for i := 0; i < int(rec.NumCols()); i++ {
			col := rec.Column(i)
			if col.IsNull(r) {
				c.field(i, "", true)
				continue
			}
			c.field(i, Text(col, r), false)
		}
		if err := c.end(); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvWriter) Close() error { return c.w.Flush() }

// Abort drops nothing: the buffered text is the caller's to discard.
func (c *csvWriter) Abort() {}

// tableWriter prints an aligned text table. It streams: the column widths come from
// the header and the first Options.Window rows, which it holds until the window is
// full (or the input ends); after that each row is printed as it arrives, a cell
// wider than its column pushing the rest of its row right. Control characters in
// cells are escaped (a newline prints as \n) so each row stays on one line.
type tableWriter struct {
	w      *bufio.Writer
	schema *arrow.Schema
	null   string
	window int
	held   [][]string // rows waiting for the widths (nil once printed)
	width  []int
	rows   int64
	begun  bool
}

func newTableWriter(w io.Writer, schema *arrow.Schema, opts Options) *tableWriter {
	t := &tableWriter{w: bufio.NewWriter(w), schema: schema, null: "NULL", window: opts.Window}
	if opts.Null != nil {
		t.null = *opts.Null
	}
	if t.window <= 0 {
		t.window = DefaultTableWindow
	}
	return t
}

func (t *tableWriter) Write(rec arrow.RecordBatch) error {
	for r := 0; r < int(rec.NumRows()); r++ {
		row := make([]string, rec.NumCols())
		for c := 0; c < int(rec.NumCols()); c++ {
			col := rec.Column(c)
			if col.IsNull(r) {
				row[c] = t.null
			} else {
				row[c] = escapeControl(Text(col, r))
			}
		}
		t.rows++
		if t.begun {
			t.line(row)
			continue
		}
		t.held = append(t.held, row)
		if len(t.held) >= t.window {
			t.begin()
		}
	}
	return nil
}

// begin sizes the columns from the header and the held rows and prints them.
func (t *tableWriter) begin() {
	n := t.schema.NumFields()
	header := make([]string, n)
	t.width = make([]int, n)
	for i, f := range t.schema.Fields() {
		header[i] = escapeControl(f.Name)
		t.width[i] = utf8.RuneCountInString(header[i])
	}
	for _, row := range t.held {
		for i, s := range row {
			t.width[i] = max(t.width[i], utf8.RuneCountInString(s))
		}
	}
	t.line(header)
	sep := make([]string, n)
	for i := range sep {
		sep[i] = strings.Repeat("-", t.width[i])
	}
	t.w.WriteString(strings.Join(sep, "-+-") + "\n")
	for _, row := range t.held {
		t.line(row)
	}
	t.held = nil
	t.begun = true
}

func (t *tableWriter) line(cells []string) {
	for i, s := range cells {
		if i > 0 {
			t.w.WriteString(" | ")
		}
		t.w.WriteString(s)
		if i < len(cells)-1 {
			if pad := t.width[i] - utf8.RuneCountInString(s); pad > 0 {
				t.w.WriteString(strings.Repeat(" ", pad))
			}
		}
	}
	t.w.WriteByte('\n')
}

// Abort drops nothing: the buffered rows are the caller's to discard.
func (t *tableWriter) Abort() {}

func (t *tableWriter) Close() error {
	if !t.begun {
		t.begin()
	}
	if t.rows == 1 {
		fmt.Fprintln(t.w, "(1 row)")
	} else {
		fmt.Fprintf(t.w, "(%d rows)\n", t.rows)
	}
	return t.w.Flush()
}

// escapeControl replaces control characters with Go-style escapes (\n, \r, \t,
// \x1b, \u0085) so that a cell never breaks the table's lines.
func escapeControl(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
