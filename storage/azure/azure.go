// Package azure registers the "azblob" table-location scheme: Delta tables in Azure
// Blob Storage. Import it for its side effect:
//
//	import _ "github.com/skiplake/skiplake/storage/azure"
//
//	st, err := storage.OpenURL(ctx, "azblob://container/tables/events?storage_account=acct")
//
// The container is the URL host; the path is a blob-name prefix (the table root).
// Query parameters: storage_account, domain, protocol, localemu=true (Azurite) and
// the others of gocloud.dev/blob/azureblob; single_writer=true (see package s3; Azure
// honours If-None-Match, so it is never needed there).
//
// Credentials come only from the environment and Azure's default chain:
// AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING,
// AZURE_STORAGE_SAS_TOKEN, or azidentity's DefaultAzureCredential (environment,
// workload identity, managed identity, Azure CLI).
//
// Conditional writes use If-None-Match: *. Azure's listing has no start-after key:
// listings start at the prefix and are filtered client-side. Open is a HEAD followed
// by one ranged read of the tail on first use. Deletes run in parallel.
package azure

import (
	"context"
	"fmt"
	"net/url"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/internal/blobstore"
)

func init() { storage.Register("azblob", open) }

// open opens an azblob:// location.
func open(ctx context.Context, u *url.URL, _ bool) (storage.Storage, error) {
	opts, q, err := blobstore.CommonParams(u)
	if err != nil {
		return nil, err
	}
	bu := &url.URL{Scheme: "azblob", Host: u.Host, RawQuery: q.Encode()}
	bucket, err := blob.DefaultURLMux().OpenBucketURL(ctx, bu) // azureblob registered its opener
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", opts.Location, storage.RedactError(err))
	}
	opts.Bucket = bucket
	return blobstore.New(opts), nil
}
