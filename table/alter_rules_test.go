package table_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/table"
)

// ALTER of a column a write rule depends on is refused naming the rule, and commits
// nothing (Delta Spark: DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE,
// DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE,
// DELTA_IDENTITY_COLUMNS_ALTER_COLUMN_NOT_SUPPORTED). rulesSchema: gen = amount + 1,
// rid is an identity column; the constraint reads key.
func TestAlterRefusesColumnsUsedByRules(t *testing.T) {
	ctx := context.Background()
	rename := func(c string) table.AlterOptions {
		return table.AlterOptions{RenameColumn: &table.ColumnRename{Column: c, NewName: c + "_new"}}
	}
	drop := func(c string) table.AlterOptions { return table.AlterOptions{DropColumns: []string{c}} }
	setType := func(c, typ string) table.AlterOptions {
		return table.AlterOptions{ChangeType: &table.ColumnType{Column: c, Type: typ}}
	}
	for _, c := range []struct {
		name string
		opts table.AlterOptions
		want string
	}{
		{"rename a constraint's column", rename("KEY"), "cannot rename column KEY because this column is referenced by the following check constraint(s): keyed (key IS NOT NULL AND key < 1000)"},
		{"drop a constraint's column", drop("key"), "cannot drop column key because this column is referenced by the following check constraint(s): keyed"},
		{"retype a constraint's column", setType("key", "decimal(20,0)"), "cannot change the type of column key because this column is referenced by the following check constraint(s)"},
		{"rename a generation source", rename("amount"), "cannot rename column amount because this column is referenced by the following generated column(s): gen (GENERATED ALWAYS AS (amount + 1))"},
		{"drop a generation source", drop("amount"), "cannot drop column amount because this column is referenced by the following generated column(s): gen"},
		{"retype a generation source", setType("amount", "decimal(20,0)"), "cannot change the type of column amount because this column is referenced by the following generated column(s): gen"},
		{"retype a generated column", setType("gen", "decimal(20,0)"), "cannot change the type of column gen: generated column gen (GENERATED ALWAYS AS (amount + 1)) has its expression's type"},
		{"rename an identity column", rename("rid"), "cannot rename column rid: ALTER TABLE is not supported for IDENTITY columns (rid is one)"},
		{"drop an identity column", drop("rid"), "cannot drop column rid: ALTER TABLE is not supported for IDENTITY columns"},
		{"retype an identity column", setType("rid", "decimal(20,0)"), "cannot change the type of column rid: ALTER TABLE is not supported for IDENTITY columns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, _ := rulesTable(t, rulesSchema, map[string]string{"keyed": "key IS NOT NULL AND key < 1000"})
			before := version(t, tb)
			_, err := tb.Alter(ctx, c.opts)
			require.ErrorIs(t, err, table.ErrColumnInUse)
			require.ErrorIs(t, err, table.ErrInvalidArgument)
			require.Contains(t, err.Error(), c.want)
			require.Equal(t, before, version(t, tb), "nothing committed")
		})
	}

	// A column no rule reads may change; so may a generated column's name, and the
	// generated column itself may be dropped (Spark allows both).
	tb, _ := rulesTable(t, rulesSchema, nil)
	_, err := tb.Alter(ctx, rename("key"))
	require.NoError(t, err)
	_, err = tb.Alter(ctx, rename("gen"))
	require.NoError(t, err)
	_, err = tb.Alter(ctx, drop("gen_new"))
	require.NoError(t, err)
	// Once the generated column is gone, its source may change.
	_, err = tb.Alter(ctx, rename("amount"))
	require.NoError(t, err)

	// A struct whose field a constraint reads cannot be dropped either.
	tb, _ = rulesTable(t, `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[`+
		`{"name":"x","type":"long","nullable":true,"metadata":{}},{"name":"y","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`,
		map[string]string{"sx": "s.x > 0"})
	_, err = tb.Alter(ctx, drop("s"))
	require.ErrorIs(t, err, table.ErrColumnInUse)
	_, err = tb.Alter(ctx, drop("s.x"))
	require.ErrorIs(t, err, table.ErrColumnInUse)
	_, err = tb.Alter(ctx, drop("s.y"))
	require.NoError(t, err)
}
