package input

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"io"
)

// csvScanner reads CSV records as encoding/csv's Reader does with FieldsPerRecord
// -1 and strict quotes (RFC 4180; \r\n read as \n; empty lines skipped; the same
// fields, errors as *csv.ParseError with the same lines and columns), and also says
// which fields were quoted. The readers need that to read CSV the way scan writes it,
// as PostgreSQL's and DuckDB's COPY do: an empty unquoted field is NULL, "" is the
// empty string, and a quoted "NULL" is the string NULL. FuzzCSVRecords checks it
// against encoding/csv.
type csvScanner struct {
	br      *bufio.Reader
	numLine int    // lines read so far
	buf     []byte // the current record's field bytes, back to back
	ends    []int  // end of each field in buf
	quoted  []bool
	pos     []csvPos
	long    []byte // a line longer than br's buffer
	fields  []string
}

type csvPos struct{ line, col int }

func newCSVScanner(br *bufio.Reader) *csvScanner { return &csvScanner{br: br} }

// readLine returns the next line with its line break normalised to \n (none at the
// end of the input; a lone \r before EOF is dropped, as encoding/csv does).
func (c *csvScanner) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		c.long = append(c.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = c.br.ReadSlice('\n')
			c.long = append(c.long, line...)
		}
		line = c.long
	}
	if len(line) > 0 && err == io.EOF {
		err = nil
		if line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
	}
	c.numLine++
	if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		line[n-2] = '\n'
		line = line[:n-1]
	}
	return line, err
}

// newlineLen is 1 when line ends in \n, else 0.
func newlineLen(line []byte) int {
	if len(line) > 0 && line[len(line)-1] == '\n' {
		return 1
	}
	return 0
}

// Read returns the next record (valid until the next call) or io.EOF.
func (c *csvScanner) Read() ([]string, error) {
	var line []byte
	var errRead error
	for errRead == nil {
		line, errRead = c.readLine()
		if errRead == nil && len(line) == newlineLen(line) {
			continue // an empty line is no record
		}
		break
	}
	if errRead == io.EOF {
		return nil, io.EOF
	}
	c.buf, c.ends, c.quoted, c.pos = c.buf[:0], c.ends[:0], c.quoted[:0], c.pos[:0]
	recLine := c.numLine
	at := csvPos{line: c.numLine, col: 1}
	end := func(start csvPos, quoted bool) {
		c.ends = append(c.ends, len(c.buf))
		c.quoted = append(c.quoted, quoted)
		c.pos = append(c.pos, start)
	}
	var err error
fields:
	for {
		if len(line) == 0 || line[0] != '"' {
			// Unquoted: up to the next comma or the line's end; no quote inside.
			i := bytes.IndexByte(line, ',')
			field := line
			if i >= 0 {
				field = field[:i]
			} else {
				field = field[:len(field)-newlineLen(field)]
			}
			if j := bytes.IndexByte(field, '"'); j >= 0 {
				err = &csv.ParseError{StartLine: recLine, Line: c.numLine, Column: at.col + j, Err: csv.ErrBareQuote}
				break
			}
			c.buf = append(c.buf, field...)
			end(at, false)
			if i < 0 {
				break
			}
			line = line[i+1:]
			at.col += i + 1
			continue
		}
		// Quoted: up to a quote followed by a comma or the line's end; "" is a
		// quote; line breaks inside belong to the field.
		start := at
		line = line[1:]
		at.col++
		for {
			i := bytes.IndexByte(line, '"')
			switch {
			case i >= 0:
				c.buf = append(c.buf, line[:i]...)
				line = line[i+1:]
				at.col += i + 1
				switch {
				case len(line) > 0 && line[0] == '"':
					c.buf = append(c.buf, '"')
					line = line[1:]
					at.col++
				case len(line) > 0 && line[0] == ',':
					line = line[1:]
					at.col++
					end(start, true)
					continue fields
				case len(line) == newlineLen(line):
					end(start, true)
					break fields
				default:
					err = &csv.ParseError{StartLine: recLine, Line: c.numLine, Column: at.col - 1, Err: csv.ErrQuote}
					break fields
				}
			case len(line) > 0:
				c.buf = append(c.buf, line...)
				if errRead != nil {
					break fields
				}
				at.col += len(line)
				line, errRead = c.readLine()
				if len(line) > 0 {
					at.line++
					at.col = 1
				}
				if errRead == io.EOF {
					errRead = nil
				}
			default: // the input ended inside the quotes
				if errRead == nil {
					err = &csv.ParseError{StartLine: recLine, Line: at.line, Column: at.col, Err: csv.ErrQuote}
					break fields
				}
				end(start, true)
				break fields
			}
		}
	}
	if err == nil {
		err = errRead
	}
	s := string(c.buf)
	c.fields = c.fields[:0]
	prev := 0
	for _, e := range c.ends {
		c.fields = append(c.fields, s[prev:e])
		prev = e
	}
	return c.fields, err
}

// Quoted reports whether field i of the last record was quoted.
func (c *csvScanner) Quoted(i int) bool { return c.quoted[i] }

// FieldPos returns the line and column (1-based, in bytes) where field i of the
// last record starts.
func (c *csvScanner) FieldPos(i int) (line, column int) { return c.pos[i].line, c.pos[i].col }
