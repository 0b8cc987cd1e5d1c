// Package s3 registers the "s3" (and "s3a") table-location scheme: Delta tables in
// Amazon S3 and S3-compatible stores (MinIO, Cloudflare R2, versitygw, ...). Import it
// for its side effect, as a database/sql driver:
//
//	import _ "github.com/skiplake/skiplake/storage/s3"
//
//	st, err := storage.OpenURL(ctx, "s3://bucket/tables/events?region=eu-west-1")
//
// The bucket is the URL host; the path is a key prefix (the table root). Query
// parameters:
//
//   - region: the bucket's region (else AWS_REGION / the profile's region);
//   - endpoint: an S3-compatible endpoint, e.g. http://127.0.0.1:7070;
//   - use_path_style=true: path-style requests (most S3-compatible stores need it);
//   - profile: a shared-config profile;
//   - disable_https=true, request_checksum_calculation=when_required and the other
//     parameters of gocloud.dev/aws V2ConfigFromURLParams and gocloud.dev/blob/s3blob;
//   - single_writer=true: see "Conditional writes" below.
//
// Credentials come only from the AWS SDK's default chain: environment variables
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared config
// and credentials files (AWS_PROFILE, profile=), web identity (IRSA, EKS pod identity)
// and instance metadata. A URL with user information is refused, and no error or log
// line prints a key.
//
// Conditional writes: commits are created with If-None-Match: * (S3 has honoured it
// since August 2024; MinIO, R2 and versitygw 1.8+ too), so exactly one of several
// concurrent committers of a version wins. Before its first conditional write a store
// checks that the condition is honoured (a probe object created twice) and refuses to
// commit if it is not, because then concurrent writers would silently overwrite each
// other's commits. single_writer=true skips the check and replaces the condition with
// a HEAD before the write: correct only while exactly one process writes the table
// (a warning says so once). A 409 ConditionalRequestConflict (a concurrent conditional
// write to the same key was in flight) is retried with the same request.
//
// Failures: the SDK retries a request 5 times (AWS_MAX_ATTEMPTS overrides) on 5xx,
// throttling and connection errors; a read whose body is cut short afterwards is sent
// again by the store, and a conditional create whose answer was lost recognises its own
// object (see storage/internal/blobstore). 500, 502, 503, 504, 429 and 408 answers and
// transport failures wrap storage.ErrTransient; other answers do not.
//
// Reads: Open fetches the last TailSize bytes with one suffix-range GET (which also
// tells the size), so a Parquet footer and page index cost one request; listings
// start server-side after the given key (ListObjectsV2 StartAfter). Writes: streamed
// objects are uploaded in parts (multipart above 16 MiB) and completed with
// If-None-Match: *; a failed or cancelled upload is aborted. VACUUM deletes with
// DeleteObjects, 1,000 keys a request, several requests in flight. Incomplete
// multipart uploads of a killed process stay in the bucket (invisible to listings)
// until a lifecycle rule (AbortIncompleteMultipartUpload) removes them: see the README.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob/s3blob"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/internal/blobstore"
)

func init() {
	storage.Register("s3", open)
	storage.Register("s3a", open)
}

// maxDeleteBatch is S3's limit of keys per DeleteObjects request.
const maxDeleteBatch = 1000

// open opens an s3:// or s3a:// location. The client is built here (not by gocloud's
// URL opener) so that it can retry more patiently than the SDK default (5 attempts with
// backoff for 5xx, throttling and connection errors, or AWS_MAX_ATTEMPTS) and stay quiet about skipped checksum
// validation of multipart objects.
func open(ctx context.Context, u *url.URL, _ bool) (storage.Storage, error) {
	opts, q, err := blobstore.CommonParams(u)
	if err != nil {
		return nil, err
	}
	var s3opts []func(*s3.Options)
	for _, p := range []struct {
		keys []string
		set  func(o *s3.Options, v bool)
	}{
		{[]string{"use_path_style", "s3ForcePathStyle"}, func(o *s3.Options, v bool) { o.UsePathStyle = v }},
		{[]string{"disable_https"}, func(o *s3.Options, v bool) { o.EndpointOptions.DisableHTTPS = v }},
		{[]string{"accelerate"}, func(o *s3.Options, v bool) { o.UseAccelerate = v }},
	} {
		for _, k := range p.keys {
			if s := q.Get(k); s != "" {
				v, err := strconv.ParseBool(s)
				if err != nil {
					return nil, fmt.Errorf("storage: %s: %s=%q: want true or false", opts.Location, k, s)
				}
				set := p.set
				s3opts = append(s3opts, func(o *s3.Options) { set(o, v) })
				q.Del(k)
			}
		}
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q) // region, endpoint, profile, ...; default credential chain
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", opts.Location, storage.RedactError(err))
	}
	s3opts = append(s3opts, func(o *s3.Options) {
		o.RetryMaxAttempts = 5
		if n, err := strconv.Atoi(os.Getenv("AWS_MAX_ATTEMPTS")); err == nil && n > 0 {
			o.RetryMaxAttempts = n // the SDK's variable (gocloud's retryer ignores it)
		}
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	client := s3.NewFromConfig(cfg, s3opts...)
	bucket, err := s3blob.OpenBucket(ctx, client, u.Host, &s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", opts.Location, storage.RedactError(err))
	}
	opts.Bucket = bucket
	opts.Hooks = blobstore.Hooks{
		StartAfter: func(as func(any) bool, key string) error {
			var in *s3.ListObjectsV2Input
			if hasControl(key) || !as(&in) {
				return nil // filtered client-side
			}
			in.StartAfter = aws.String(key)
			return nil
		},
		TailRead: blobstore.SuffixReader(bucket, func(as func(any) bool, rng string) error {
			var in *s3.GetObjectInput
			if !as(&in) {
				return errors.New("storage: s3: no GetObjectInput to set a suffix range on")
			}
			in.Range = aws.String(rng)
			return nil
		}),
		RetrySame: isConditionalConflict,
		Transient: transient,
		Exhausted: func(err error) bool {
			var mae *retry.MaxAttemptsError
			return errors.As(err, &mae) && mae.Attempt > 1 // one attempt (AWS_MAX_ATTEMPTS=1) is no retry
		},
		DeleteBatch: func(ctx context.Context, keys []string) (map[string]error, error) {
			failed, err := deleteObjects(ctx, client, u.Host, keys)
			for _, k := range keys {
				if hasControl(k) {
					// gocloud escapes these characters; its single delete knows how.
					if derr := bucket.Delete(ctx, k); derr != nil {
						failed[k] = derr
					}
				}
			}
			return failed, err
		},
		BatchSize:             maxDeleteBatch,
		DeleteChecksExistence: true,
		AbortUploads: func(ctx context.Context, key string) error {
			return abortUploads(ctx, client, u.Host, key)
		},
		AbortStale: func(ctx context.Context, prefix string, cutoff time.Time) (int, error) {
			return abortStale(ctx, client, u.Host, prefix, cutoff)
		},
	}
	return blobstore.New(opts), nil
}

// abortUploads aborts every incomplete multipart upload of exactly key. A cancelled
// CreateMultipartUpload can leave an upload whose id the client never learned; data
// file names are unique, so an upload of the key is one of ours.
func abortUploads(ctx context.Context, client *s3.Client, bucket, key string) error {
	if hasControl(key) {
		return nil
	}
	out, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		return err
	}
	var errs []error
	for _, up := range out.Uploads {
		if aws.ToString(up.Key) != key {
			continue
		}
		_, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: up.Key, UploadId: up.UploadId})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// abortStale aborts the incomplete multipart uploads under prefix started before
// cutoff, paging through ListMultipartUploads.
func abortStale(ctx context.Context, client *s3.Client, bucket, prefix string, cutoff time.Time) (int, error) {
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)}
	n := 0
	var errs []error
	for {
		out, err := client.ListMultipartUploads(ctx, in)
		if err != nil {
			return n, err
		}
		for _, up := range out.Uploads {
			if up.Initiated == nil || !up.Initiated.Before(cutoff) || hasControl(aws.ToString(up.Key)) {
				continue
			}
			_, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: up.Key, UploadId: up.UploadId})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, errors.Join(errs...)
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// isConditionalConflict reports S3's 409 ConditionalRequestConflict: another
// conditional write to the key was in flight; the same request should be retried.
// gocloud maps it to gcerrors.Unknown, so it is recognised here.
func isConditionalConflict(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ConditionalRequestConflict"
}

// transient classifies an S3 answer by its HTTP status: 500, 502, 503, 504, 429 and
// 408 (and the codes S3 sends with them) may not recur; other answers will. Errors
// without an answer (transport failures) are left to the generic rules.
func transient(err error) (bool, bool) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "Throttling", "ThrottlingException":
			return true, true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		switch c := re.HTTPStatusCode(); c {
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
			http.StatusTooManyRequests, http.StatusRequestTimeout:
			return true, true
		default:
			return false, true
		}
	}
	return false, false
}

// deleteObjects deletes keys with one DeleteObjects request (Quiet mode: only failures
// are reported). Keys with control characters, which gocloud escapes, are skipped: the
// caller deletes them one by one through the bucket.
func deleteObjects(ctx context.Context, client *s3.Client, bucket string, keys []string) (map[string]error, error) {
	failed := map[string]error{}
	var objs []types.ObjectIdentifier
	for _, k := range keys {
		if hasControl(k) {
			continue
		}
		objs = append(objs, types.ObjectIdentifier{Key: aws.String(k)})
	}
	if len(objs) == 0 {
		return failed, nil
	}
	out, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(bucket),
		Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return nil, err
	}
	for _, e := range out.Errors {
		failed[aws.ToString(e.Key)] = fmt.Errorf("%s: %s", aws.ToString(e.Code), aws.ToString(e.Message))
	}
	return failed, nil
}

// hasControl reports whether key has a byte below 0x20 (gocloud escapes those).
func hasControl(key string) bool {
	return strings.IndexFunc(key, func(r rune) bool { return r < 0x20 }) >= 0
}
