package table

import (
	"errors"
	"fmt"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
)

// Sentinel errors of package table. Errors returned by the package wrap them (or the
// sentinels of packages log and storage) so callers can test with errors.Is.
var (
	// ErrNotATable reports that the location holds no Delta log.
	ErrNotATable = errors.New("table: not a Delta table (no _delta_log commits)")
	// ErrTableExists reports that Create found an existing table.
	ErrTableExists = errors.New("table: table already exists")
	// ErrSchemaMismatch reports data whose schema does not match the table's: a
	// column the table lacks, or a type store assignment cannot convert.
	ErrSchemaMismatch = conform.ErrSchemaMismatch
	// ErrNullInNonNullable reports a NULL in a column declared NOT NULL, or a NOT
	// NULL column the data lacks.
	ErrNullInNonNullable = conform.ErrNullInNonNullable
	// ErrValueDoesNotFit reports a source value that its column's type cannot hold
	// (see CastError, which names the column, the value, its row and both types).
	ErrValueDoesNotFit = conform.ErrValueDoesNotFit
	// ErrReplaceWhereMismatch reports a row written by an overwrite with
	// WriteOptions.ReplaceWhere that does not satisfy the predicate (Spark's
	// DELTA_REPLACE_WHERE_MISMATCH).
	ErrReplaceWhereMismatch = errors.New("table: written data does not match the replaceWhere predicate")
	// ErrInvalidArgument reports a bad option or argument.
	ErrInvalidArgument = tableview.ErrInvalidArgument
	// ErrColumnInUse reports an ALTER (rename, drop, type change) of a column a write
	// rule depends on: one a CHECK constraint or invariant references, the source of
	// a generated column (or, for a type change, a generated column itself), or an
	// identity column. errors.Is also matches ErrInvalidArgument.
	ErrColumnInUse = fmt.Errorf("%w: column used by a write rule", ErrInvalidArgument)
	// ErrMissingDataFile reports that a file the log references is not in storage.
	ErrMissingDataFile = scanexec.ErrMissingDataFile
	// ErrUnknownColumn reports a column name the schema does not have.
	ErrUnknownColumn = scanexec.ErrUnknownColumn
	// ErrLocationNotEmpty reports that Create was asked to create a table in a
	// location that already holds files which are not part of a Delta table (see
	// CreateOptions.AllowNonEmpty).
	ErrLocationNotEmpty = errors.New("table: location is not empty and not a Delta table")
	// ErrCorruptData reports a data file that is not valid Parquet or that the Parquet
	// decoder failed on (a damaged footer, page, page index or schema). The error
	// names the file and, where known, the row group and column; a scan that meets
	// one fails and changes nothing.
	ErrCorruptData = datafile.ErrCorruptData
	// ErrInvalidDeletionVector reports a deletion vector that deletes row positions its
	// data file does not have (row 1,000,000 of a 10-row file: a damaged or foreign
	// log). Every reader refuses such a vector — scan, count, DML and OPTIMIZE —
	// naming the file and the version; nothing is answered or committed with it.
	ErrInvalidDeletionVector = dv.ErrInvalidRows
	// ErrMergeCardinality reports a MERGE in which several source rows match the same
	// target row while a WHEN MATCHED clause other than a single unconditional DELETE
	// would apply (Spark's DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE).
	ErrMergeCardinality = dml.ErrMergeCardinality
	// ErrRestoreMissingFiles reports a RESTORE to a version some of whose files no
	// longer exist (VACUUM deleted them).
	ErrRestoreMissingFiles = errors.New("table: files of the version to restore are missing")
	// ErrMissingStats reports files without statistics for a column that is to become
	// a clustering column (PROTOCOL.md "Writer Requirements for Clustered Table"
	// requires every file of a clustered table to
	// have statistics for its clustering columns). Rewriting those files (OPTIMIZE)
	// gives them statistics.
	ErrMissingStats = errors.New("table: files lack statistics for a clustering column")
	// ErrLayoutChanged reports data files written for the physical layout (names,
	// field ids, partitioning) of one version that could not be committed to the
	// version the table had meanwhile (invariant T1): a write or DML command whose
	// table changed its schema, column mapping or partitioning under it. Nothing was
	// committed and the files were deleted; the error says what changed.
	ErrLayoutChanged = tableview.ErrLayoutChanged
	// ErrChangesUnavailable reports changes of a version that cannot be read
	// (Table.Changes): the table's change data feed was not enabled there, its
	// commit or change files are gone (log cleanup, VACUUM), or a schema change
	// lies in the range that its end version's schema cannot read. The error names
	// the version.
	ErrChangesUnavailable = errors.New("table: changes not available")
)

// CastError reports a source value a write could not store in its column: the
// column's type cannot hold it (an integer out of range, a decimal with too many
// digits, NaN into an integer, ...). It names the column's path, both types (as
// Delta names them), the value as the source spells it and its row in the write's
// input (from 0); it matches ErrValueDoesNotFit. Nothing is committed when a write
// returns it.
type CastError = conform.CastError
