package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/input"
	"github.com/skiplake/skiplake/table"
)

// inputArg is one input named on the command line: a file, or "-" for standard input.
type inputArg struct {
	path   string
	format input.Format
}

// name is how messages refer to the input.
func (in inputArg) name() string {
	if in.path == "-" {
		return "<stdin>"
	}
	return in.path
}

// source is the input as the input package reads it.
func (in inputArg) source(e *env) input.Source {
	if in.path == "-" {
		return input.Stream(in.name(), in.format, e.stdin)
	}
	return input.File(in.path, in.format)
}

// sources are the inputs as the input package reads them.
func sources(e *env, inputs []inputArg) []input.Source {
	out := make([]input.Source, len(inputs))
	for i, in := range inputs {
		out[i] = in.source(e)
	}
	return out
}

// inputFormat picks the reader by file extension.
func inputFormat(path string) (input.Format, error) {
	f, err := input.FormatOf(path)
	if errors.Is(err, input.ErrUnknownFormat) {
		return "", fmt.Errorf("%s: unknown input format (want .parquet, .csv or .jsonl, or give --input-format)", path)
	}
	return f, err
}

// parseInputs turns the FILE arguments into inputs: the format is --input-format when
// given, else the file extension. "-" (standard input, at most once) needs
// --input-format and cannot be Parquet (a Parquet file is read from its end).
func parseInputs(args []string, format string) ([]inputArg, error) {
	switch format {
	case "", "parquet", "csv", "jsonl":
	default:
		return nil, usagef("--input-format %q: want parquet, csv or jsonl", format)
	}
	var out []inputArg
	stdin := false
	for _, a := range args {
		if a == "-" {
			if stdin {
				return nil, usagef("standard input (-) can be read only once")
			}
			stdin = true
			if format == "" {
				return nil, usagef("reading standard input (-) needs --input-format csv or jsonl")
			}
			if format == "parquet" {
				return nil, usagef("Parquet cannot be read from standard input; give a file")
			}
			out = append(out, inputArg{path: a, format: input.Format(format)})
			continue
		}
		f := input.Format(format)
		if f == "" {
			var err error
			if f, err = inputFormat(a); err != nil {
				return nil, usagef("%v", err)
			}
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not an input file", a)
		}
		out = append(out, inputArg{path: a, format: f})
	}
	return out, nil
}

// inferSchema infers a new table's schema from every CSV and JSONL input, reading
// each completely (files are read twice: now and when writing), so a column first
// seen on the last line is not lost. Standard input cannot be read twice: it needs
// --schema.
func inferSchema(e *env, inputs []inputArg) (*arrow.Schema, error) {
	s, err := input.InferSchema(sources(e, inputs))
	if errors.Is(err, input.ErrReadOnce) {
		return nil, usagef("creating a table from standard input needs --schema (the input cannot be read twice to infer it)")
	}
	return s, err
}

// parseSchemaFlag reads --schema: a Delta (Spark) JSON schema {"type":"struct",...}
// or SQL column definitions ("id bigint, ts timestamp"); "@FILE" reads either from a
// file. Column rules (GENERATED ...) are refused: only create takes them
// (parseCreateSchemaFlag).
func parseSchemaFlag(s string) (*arrow.Schema, error) {
	schema, rules, err := parseCreateSchemaFlag(s)
	if err != nil {
		return nil, err
	}
	if len(rules) > 0 {
		return nil, usagef("--schema: column %q has a GENERATED clause (or generation, identity or invariant metadata): only skiplake create takes them", rules[0].Column)
	}
	return schema, nil
}

// parseCreateSchemaFlag reads create's --schema: parseSchemaFlag's forms, with the
// columns' GENERATED ALWAYS AS (expr) and GENERATED ALWAYS|BY DEFAULT AS IDENTITY
// clauses (table.ParseSchemaRules).
func parseCreateSchemaFlag(s string) (*arrow.Schema, []table.ColumnRule, error) {
	text := s
	if name, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, nil, fmt.Errorf("--schema: %w", err)
		}
		text = string(b)
	}
	schema, rules, err := table.ParseSchemaRules(text)
	if err != nil {
		return nil, nil, usagef("--schema: %v", err)
	}
	return schema, rules, nil
}

// withoutColumns returns s without the top-level columns named in drop (lower case).
func withoutColumns(s *arrow.Schema, drop map[string]bool) *arrow.Schema {
	if len(drop) == 0 {
		return s
	}
	var fields []arrow.Field
	for _, f := range s.Fields() {
		if !drop[strings.ToLower(f.Name)] {
			fields = append(fields, f)
		}
	}
	return arrow.NewSchema(fields, nil)
}

// newInputReader streams every input, in order, as one record reader (input.Concat):
// CSV and JSONL values typed by types, the schema reported being declared; computed
// names (lower case) the table's generated and identity columns, which inputs may lack.
func newInputReader(ctx context.Context, e *env, types, declared *arrow.Schema, inputs []inputArg, computed map[string]bool) *input.Concat {
	opts := input.Options{Declared: declared}
	for c := range computed {
		opts.Computed = append(opts.Computed, c)
	}
	return input.NewConcat(ctx, sources(e, inputs), types, opts)
}

// explainInputError prefixes an error the table's writer returned about the inputs
// r reads with the input it concerns: an input's own error as it is; a value that
// does not fit its column, or a row outside --replace-where, with the input and the
// row's line in it (its position among the input's rows, counting from 1); other
// schema errors with the input being read.
func explainInputError(r *input.Concat, err error) error {
	if r.Err() != nil {
		return r.Err()
	}
	var ce *table.CastError
	var rw *table.ReplaceWhereError
	switch {
	case errors.As(err, &ce):
		name, row := r.Locate(ce.Row)
		return fmt.Errorf("%s: row %d: column %q: the value %s (%s) does not fit %s: %s: %w", name, row, ce.Column, ce.Value, ce.From, ce.To, ce.Reason, table.ErrValueDoesNotFit)
	case errors.As(err, &rw):
		name, row := r.Locate(rw.Row)
		return fmt.Errorf("%s: row %d (%s) does not satisfy --replace-where %q; nothing was written: %w", name, row, rw.Values, rw.Predicate, table.ErrReplaceWhereMismatch)
	case errors.Is(err, table.ErrSchemaMismatch) || errors.Is(err, table.ErrNullInNonNullable):
		if r.Current() != "" {
			return fmt.Errorf("%s: %w", r.Current(), err)
		}
	}
	return err
}
