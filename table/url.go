package table

import (
	"context"
	"errors"
	"fmt"

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

// closeStore releases a store that will not be used (a directory handle, an SDK
// client) when it is a storage.Closer; the store was not used, so there is nothing to
// report from closing it.
func closeStore(st storage.Storage) { _ = storage.Close(st) }
