package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/storage"

	"github.com/skiplake/skiplake/table"
)

func init() {
	register(&command{name: "alter", usage: `TABLE [--set-property k=v]... | [--unset-property k]... [--if-exists] | [--add-column "name type"]... | [--rename-column OLD=NEW] | [--drop-column NAME]... | [--set-type NAME=TYPE] | [--comment NAME=TEXT] | [--cluster-by c1,c2|none] | [--add-constraint name=expr] | [--drop-constraint name [--if-exists]] [--format table|json]`,
		summary: "change table properties, columns, clustering columns or CHECK constraints (one commit)", examples: []string{`skiplake alter /tmp/t --set-property delta.enableDeletionVectors=true`, `skiplake alter /tmp/t --add-column "note string"`,
			`skiplake alter /tmp/t --rename-column amount=total`, `skiplake alter /tmp/t --drop-column note`, `skiplake alter /tmp/t --set-type qty=bigint`, `skiplake alter /tmp/t --comment "total=order total in EUR"`, `skiplake alter /tmp/t --cluster-by country,ts`, `skiplake alter /tmp/t --add-constraint "positive=amount > 0"`},
		run: runAlter})
}

// repeatFlag collects every value of a repeatable flag as given (no comma split:
// types such as decimal(10,2) hold commas).
type repeatFlag []string

func (r *repeatFlag) String() string { return strings.Join(*r, "; ") }
func (r *repeatFlag) Set(s string) error {
	*r = append(*r, s)
	return nil
}

func runAlter(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("alter", flag.ContinueOnError)
	set := kvFlag{}
	fs.Var(set, "set-property", "table property key=value to set (repeatable)")
	var unset, add repeatFlag
	fs.Var(&unset, "unset-property", "table property key to remove (repeatable)")
	ifExists := fs.Bool("if-exists", false, "with --unset-property: ignore keys the table does not have; with --drop-constraint: a constraint it does not have")
	fs.Var(&add, "add-column", `column to append, "name type" (e.g. "amount decimal(10,2)", "address.zip int"; repeatable)`)
	var cluster listFlag
	fs.Var(&cluster, "cluster-by", "new clustering columns (comma-separated, st.x for field x of struct st; none for CLUSTER BY NONE): a metadata-only commit that rewrites no file; the table becomes clustered if it is not (unpartitioned tables only)")
	rename := fs.String("rename-column", "", "rename column OLD to NEW (st.x for field x of struct st); enables column mapping (name mode) if the table has none, rewriting no file")
	var drop repeatFlag
	fs.Var(&drop, "drop-column", "column to drop (repeatable; st.x for a struct field); enables column mapping (name mode) if the table has none, rewriting no file; partition and clustering columns cannot be dropped")
	setType := fs.String("set-type", "", "widen a column's type, NAME=TYPE (e.g. qty=bigint, price=decimal(12,2), tags.element=bigint) under the typeWidening feature (enabled if the table lacks it); files written before read back widened")
	comment := fs.String("comment", "", "set a column's comment, NAME=TEXT (an empty TEXT removes it)")
	addConstraint := fs.String("add-constraint", "", "CHECK constraint name=expr to add (a Spark SQL boolean expression); every live row is checked first, files whose statistics prove it are not read")
	dropConstraint := fs.String("drop-constraint", "", "CHECK constraint to remove (with --if-exists: no error when the table lacks it)")
	format := fs.String("format", "table", "table or json")
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	kinds := 0
	for _, n := range []int{len(set), len(unset), len(add), len(cluster), len(*rename), len(drop), len(*setType), boolInt(flagSet(fs, "comment")), len(*addConstraint), len(*dropConstraint)} {
		if n > 0 {
			kinds++
		}
	}
	if kinds != 1 {
		return usagef("give one kind of change: --set-property, --unset-property, --add-column, --rename-column, --drop-column, --set-type, --comment, --cluster-by, --add-constraint or --drop-constraint (each is one operation in the table history)")
	}
	if *ifExists && len(unset) == 0 && *dropConstraint == "" {
		return usagef("--if-exists applies to --unset-property and --drop-constraint only")
	}
	opts := table.AlterOptions{SetProperties: set, UnsetProperties: unset, IfExists: *ifExists, DropConstraint: strings.TrimSpace(*dropConstraint)}
	if *addConstraint != "" {
		c, err := parseConstraintFlag("add-constraint", *addConstraint)
		if err != nil {
			return err
		}
		opts.AddConstraint = &c
	}
	if len(cluster) == 1 && strings.EqualFold(cluster[0], "none") {
		opts.ClusterByNone = true
	} else {
		opts.ClusterBy = cluster
	}
	for _, def := range add {
		c, err := table.ParseColumn(def)
		if err != nil {
			return usagef("--add-column %q: %v", def, err)
		}
		opts.AddColumns = append(opts.AddColumns, c)
	}
	opts.DropColumns = drop
	if *rename != "" {
		from, to, ok := splitColumnAssignment(*rename)
		if !ok || from == "" || to == "" {
			return usagef("--rename-column %q: want OLD=NEW", *rename)
		}
		opts.RenameColumn = &table.ColumnRename{Column: from, NewName: to}
	}
	if *setType != "" {
		col, typ, ok := splitColumnAssignment(*setType)
		if !ok || col == "" || typ == "" {
			return usagef("--set-type %q: want NAME=TYPE", *setType)
		}
		opts.ChangeType = &table.ColumnType{Column: col, Type: typ}
	}
	if flagSet(fs, "comment") {
		col, text, ok := splitColumnAssignment(*comment)
		if !ok || col == "" {
			return usagef("--comment %q: want NAME=TEXT", *comment)
		}
		opts.SetComment = &table.ColumnComment{Column: col, Comment: text}
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	res, err := t.Alter(ctx, opts)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "skiplake alter: warning: %s\n", w)
	}
	if *format == "json" {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "altered %s: version %d (%s)\n", storage.RedactLocation(path), res.Version, res.Operation)
	if opts.AddConstraint != nil {
		fmt.Fprintf(e.stdout, "checked the live rows: %d files read, %d proven by their statistics\n", res.FilesChecked, res.FilesSkipped)
	}
	if res.ProtocolUpgraded {
		fmt.Fprintf(e.stdout, "protocol upgraded to reader %d, writer %d", res.MinReaderVersion, res.MinWriterVersion)
		if len(res.ReaderFeatures)+len(res.WriterFeatures) > 0 {
			fmt.Fprintf(e.stdout, "; features reader [%s], writer [%s]", strings.Join(res.ReaderFeatures, ", "), strings.Join(res.WriterFeatures, ", "))
		}
		fmt.Fprintln(e.stdout)
	}
	return nil
}

// splitColumnAssignment splits "NAME=VALUE" at the first '=' outside backticks (a
// quoted column name may hold '='); the name is trimmed, the value is not.
func splitColumnAssignment(s string) (name, val string, ok bool) {
	quoted := false
	for i, r := range s {
		switch {
		case r == '`':
			quoted = !quoted
		case r == '=' && !quoted:
			return strings.TrimSpace(s[:i]), s[i+1:], true
		}
	}
	return "", "", false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
