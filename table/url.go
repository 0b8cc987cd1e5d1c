package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/storage"
)

// OpenURL opens the table at a location: a local path, a file:// URL, or an
// object-store URL (s3://bucket/prefix, gs://bucket/prefix, azblob://container/prefix)
// whose backend the program imports (see storage.ParseLocation and storage.Register;
// the CLI imports all of them). An unknown scheme is an error wrapping
// storage.ErrUnknownScheme, never a local directory. It fails with ErrNotATable when
// the location holds no Delta log.
func OpenURL(ctx context.Context, location string) (*Table, error) {
	loc, err := storage.ParseLocation(location)
	if err != nil {
		return nil, err
	}
	st, err := storage.OpenLocation(ctx, loc, false)
	if err != nil {
		if loc.IsLocal() && errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotATable, loc, err)
		}
		return nil, err
	}
	t, err := Open(ctx, st)
	if err != nil {
		closeStore(st)
		return nil, err
	}
	return t, nil
}

// CreateURL creates a new table at a location (see OpenURL for the forms); a missing
// local directory is created first (and removed again if creating the table fails).
// It fails with ErrTableExists when a log is already there and with
// ErrLocationNotEmpty when the location holds other files (unless
// CreateOptions.AllowNonEmpty). The schema, partition columns and properties are
// validated before anything is created.
func CreateURL(ctx context.Context, location string, schema *arrow.Schema, opts CreateOptions) (*Table, error) {
	return CreatePath(ctx, location, schema, opts)
}

// closeStore releases a store that will not be used (a directory handle, an SDK
// client) when it has a Close method.
func closeStore(st storage.Storage) {
	if c, ok := st.(interface{ Close() error }); ok {
		c.Close()
	}
}
