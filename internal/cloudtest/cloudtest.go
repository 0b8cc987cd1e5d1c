// Package cloudtest gives tests the location of a fresh, empty table root on a local
// object-store server (versitygw for S3, fake-gcs-server for GCS, Azurite for Azure).
// The servers are named by environment variables that .ci/run always sets:
//
//	SKIPLAKE_S3_ENDPOINT     http://127.0.0.1:PORT (credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
//	SKIPLAKE_GCS_ENDPOINT    127.0.0.1:PORT (fake-gcs-server, plain HTTP)
//	SKIPLAKE_AZURE_ENDPOINT  127.0.0.1:PORT (Azurite's blob service; its well-known dev account)
//
// A test skips when its variable is unset (a developer without the servers), and
// FAILS when the variable is set but the server does not answer: CI must never pass by
// skipping. Every call returns a new random prefix in a shared test bucket, so tests
// see empty stores and can run in parallel.
package cloudtest

import (
	"context"

	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/skiplake/skiplake/storage"
)

// Bucket is the bucket (container) every test location lives in.
const Bucket = "skiplake-test"

// Env variables naming the servers.
const (
	EnvS3    = "SKIPLAKE_S3_ENDPOINT"
	EnvGCS   = "SKIPLAKE_GCS_ENDPOINT"
	EnvAzure = "SKIPLAKE_AZURE_ENDPOINT"
)

// Azurite's documented development account (public, the same in every Azurite).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==" // not a secret: Azurite's fixed dev key
)

// Backend describes one kind of server.
type Backend struct {
	// Name is "s3", "gcs" or "azure".
	Name string
	// Env is the variable that names the endpoint.
	Env string
	// makeBucket creates Bucket on the server if it is missing.
	makeBucket func(ctx context.Context, endpoint string) error
	// location builds the URL of prefix in Bucket.
	location func(endpoint, prefix string) string
	// setup prepares the process environment (credentials, emulator host).
	setup func(endpoint string)
}

var (
	bucketMu   sync.Mutex
	bucketDone = map[string]bool{}
)

// Endpoint returns the backend's endpoint, skipping the test when its variable is
// unset and failing it when the server does not accept connections.
func (b Backend) Endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv(b.Env)
	if ep == "" {
		t.Skipf("%s is not set: no local %s server (.ci/run starts one)", b.Env, b.Name)
	}
	hostport := ep
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		hostport = u.Host
	}
	c, err := net.DialTimeout("tcp", hostport, 5*time.Second)
	if err != nil {
		t.Fatalf("%s=%s is set but the %s server does not answer: %v", b.Env, ep, b.Name, err)
	}
	c.Close()
	return ep
}

// Location returns the URL of a fresh, empty prefix on the backend's server (see the
// package documentation for when it skips or fails).
func (b Backend) Location(t testing.TB) string {
	t.Helper()
	ep := b.Endpoint(t)
	b.setup(ep)
	bucketMu.Lock()
	defer bucketMu.Unlock()
	if !bucketDone[b.Name] {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.makeBucket(ctx, ep); err != nil {
			t.Fatalf("creating the %s test bucket on %s: %v", b.Name, ep, err)
		}
		bucketDone[b.Name] = true
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if len(name) > 60 {
		name = name[:60]
	}
	return b.location(ep, "t/"+name+"-"+uuid.NewString()[:8])
}

// S3 is versitygw (or any S3-compatible server) at SKIPLAKE_S3_ENDPOINT.
var S3 = Backend{
	Name: "s3", Env: EnvS3,
	setup: func(string) {
		setDefault("AWS_REGION", "us-east-1")
		setDefault("AWS_EC2_METADATA_DISABLED", "true")
	},
	makeBucket: makeS3Bucket,
	location: func(ep, prefix string) string {
		return S3URL(ep, Bucket, prefix)
	},
}

// S3URL returns an s3:// location for prefix in bucket on an S3-compatible endpoint.
func S3URL(endpoint, bucket, prefix string) string {
	q := url.Values{"endpoint": {endpoint}, "use_path_style": {"true"}, "region": {"us-east-1"}}
	return "s3://" + bucket + "/" + prefix + "?" + q.Encode()
}

// GCS is fake-gcs-server at SKIPLAKE_GCS_ENDPOINT.
var GCS = Backend{
	Name: "gcs", Env: EnvGCS,
	setup: func(ep string) {
		setDefault("STORAGE_EMULATOR_HOST", strings.TrimPrefix(ep, "http://"))
	},
	makeBucket: makeGCSBucket,
	location: func(_, prefix string) string {
		return "gs://" + Bucket + "/" + prefix
	},
}

// Azure is Azurite at SKIPLAKE_AZURE_ENDPOINT.
var Azure = Backend{
	Name: "azure", Env: EnvAzure,
	setup: func(string) {
		setDefault("AZURE_STORAGE_ACCOUNT", AzuriteAccount)
		setDefault("AZURE_STORAGE_KEY", AzuriteKey)
	},
	makeBucket: makeAzureContainer,
	location: func(ep, prefix string) string {
		return AzureURL(ep, Bucket, prefix)
	},
}

// AzureURL returns an azblob:// location for prefix in container on Azurite.
func AzureURL(endpoint, container, prefix string) string {
	host := strings.TrimPrefix(endpoint, "http://")
	q := url.Values{"localemu": {"true"}, "domain": {host}, "protocol": {"http"}}
	return "azblob://" + container + "/" + prefix + "?" + q.Encode()
}

// setDefault sets an environment variable unless it is already set.
func setDefault(k, v string) {
	if os.Getenv(k) == "" {
		os.Setenv(k, v)
	}
}

// ignoreExists treats "already exists" answers to a create as success.
func ignoreExists(err error, codes ...string) error {
	if err == nil {
		return nil
	}
	for _, c := range codes {
		if strings.Contains(err.Error(), c) {
			return nil
		}
	}
	return err
}

// Open opens a fresh, empty store on the backend's server (see Location for when it
// skips or fails); the test's cleanup closes it. It fits storagetest.Run.
func (b Backend) Open(t *testing.T) storage.Storage {
	t.Helper()
	loc := b.Location(t)
	st, err := storage.OpenURL(context.Background(), loc)
	if err != nil {
		t.Fatalf("OpenURL(%s): %v", loc, err)
	}
	t.Cleanup(func() { storage.Close(st) })
	return st
}
