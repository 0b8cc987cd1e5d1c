// Package gcs registers the "gs" table-location scheme: Delta tables in Google Cloud
// Storage. Import it for its side effect:
//
//	import _ "github.com/skiplake/skiplake/storage/gcs"
//
//	st, err := storage.OpenURL(ctx, "gs://bucket/tables/events")
//
// The bucket is the URL host; the path is a key prefix (the table root). Query
// parameters: single_writer=true (see package s3 for its meaning; GCS always honours
// the condition, so it is never needed there) and those of gocloud.dev/blob/gcsblob
// (anonymous=true, universe_domain=...).
//
// Credentials come only from Google's Application Default Credentials:
// GOOGLE_APPLICATION_CREDENTIALS, gcloud's user credentials, workload identity and
// the metadata server. STORAGE_EMULATOR_HOST=host:port points the client at an
// emulator (fake-gcs-server) without credentials.
//
// Conditional writes use ifGenerationMatch=0 (create only if no live object exists).
// Listings start server-side at the start key (StartOffset). Open is one read of the
// object's last bytes (a negative-offset range, which also tells the size); other
// reads are ranged reads. Deletes run in parallel (GCS has no batch delete in its JSON client).
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"

	skstorage "github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/internal/blobstore"
)

func init() { skstorage.Register("gs", open) }

// open opens a gs:// location. The storage.Client is built here rather than by
// gocloud's URL opener so that it reads through the JSON API (which every emulator
// serves; the XML read path is the SDK's default) and finds credentials (or
// STORAGE_EMULATOR_HOST) the SDK's own way.
func open(ctx context.Context, u *url.URL, _ bool) (skstorage.Storage, error) {
	opts, q, err := blobstore.CommonParams(u)
	if err != nil {
		return nil, err
	}
	copts := []option.ClientOption{storage.WithJSONReads()}
	for k := range q {
		switch k {
		case "anonymous":
			if v, err := strconv.ParseBool(q.Get(k)); err != nil {
				return nil, fmt.Errorf("storage: %s: anonymous=%q: want true or false", opts.Location, q.Get(k))
			} else if v {
				copts = append(copts, option.WithoutAuthentication())
			}
		case "universe_domain":
			copts = append(copts, option.WithUniverseDomain(q.Get(k)))
		default:
			return nil, fmt.Errorf("storage: %s: unknown query parameter %q (gs:// takes anonymous, universe_domain, single_writer)", opts.Location, k)
		}
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", opts.Location, skstorage.RedactError(err))
	}
	bucket, err := gcsblob.OpenBucket(ctx, nil, u.Host, &gcsblob.Options{Client: client})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("storage: open %s: %w", opts.Location, skstorage.RedactError(err))
	}
	opts.Bucket = bucket
	opts.OnClose = client.Close
	bkt := client.Bucket(u.Host)
	opts.Hooks = blobstore.Hooks{
		TailRead: func(ctx context.Context, key string, n int64) ([]byte, int64, error) {
			if strings.ContainsAny(key, "\n\r") {
				return nil, 0, errors.New("key escaped by gocloud") // falls back to a metadata request
			}
			r, err := bkt.Object(key).NewRangeReader(ctx, -n, -1)
			if err != nil {
				if errors.Is(err, storage.ErrObjectNotExist) {
					return nil, 0, fmt.Errorf("%w: %v", skstorage.ErrNotExist, err)
				}
				return nil, 0, err
			}
			defer r.Close()
			buf, err := io.ReadAll(r)
			return buf, r.Attrs.Size, err
		},
		StartAfter: func(as func(any) bool, key string) error {
			var q *storage.Query
			if as(&q) {
				q.StartOffset = key // inclusive; the Store drops key itself
			}
			return nil
		},
	}
	return blobstore.New(opts), nil
}
