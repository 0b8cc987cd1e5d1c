package datafile

import (
	"context"
	"fmt"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// LoadDeletionVector loads the deletion vector an add action points to (d nil: the file
// has none, and nil is returned) from the table stored in store. Vectors stored by
// absolute path ('p') resolve against the store's root when it has one (local
// directories); elsewhere they fail to load with an error. Pass the result as
// [ReadOptions.Deleted]; it is immutable and safe for concurrent use.
func LoadDeletionVector(ctx context.Context, store storage.Storage, d *log.DeletionVectorDescriptor) (*dv.Deleted, error) {
	if d == nil {
		return nil, nil
	}
	desc := dv.Descriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
	if d.Offset != nil {
		desc.Offset = *d.Offset
	}
	del, err := dv.Load(ctx, store.Get, storage.RootOf(store), desc)
	if err != nil {
		return nil, fmt.Errorf("datafile: deletion vector %s: %w", d.UniqueID(), err)
	}
	return del, nil
}
