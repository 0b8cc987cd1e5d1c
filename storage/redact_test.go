package storage_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skiplake/skiplake/storage"
)

// HostileLocations are table locations that carry credentials in every place a URL
// can hold one. Every secret contains "SECRET" (upper case), which nothing else in a
// message does; the S3 ones name an endpoint that refuses connections, so nothing
// leaves the machine.
//
// cmd/skiplake keeps a copy (TestNoSecretInMessages): a storage_test package cannot
// import the backends without registering them for this package's other tests.
var hostileLocations = []string{
	"s3://AKIAUSERSECRET1:SECRETPW1@bucket/t?endpoint=http://127.0.0.1:1",
	"s3://bucket/t?endpoint=http://u:SECRETPW2@127.0.0.1:1",
	"s3://bucket/t?endpoint=http://USERSECRET2b@127.0.0.1:1",
	"s3://bucket/t?endpoint=http%3A%2F%2Fu%3ASECRETPW3%40127.0.0.1%3A1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&sig=SECRETSIG4&region=us-east-1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&X-Amz-Signature=SECRETSIG5&X-Amz-Credential=AKIA%2FSECRET5",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&access_token=SECRETTOK6",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&aws_secret_access_key=SECRETKEY7",
	"s3://bucket/t?endpoint=http://127.0.0.1:1#SECRETFRAG8",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&SECRETBARE9",
	"s3://bucket/t?endpoint=http://127.0.0.1:1/?token=SECRETTOK10",
	"s3://bucket/t?endpoint=http://127.0.0.1:1/%3Ftoken%3DSECRETTOK11",
	"s3:u:SECRETPW12@bucket/t",
	"file://u:SECRETPW13@localhost/tmp/x",
	"s3://bucket/t?endpoint=http://u:SECRET/PW14@127.0.0.1:1",
	"s3://u:SECRET%2FPW15@bucket/t",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&endpoint=http://u:SECRETPW16@127.0.0.1:2",
	"s3://bucket/t?profile=p&endpoint=http://user%40corp:SECRETPW17@127.0.0.1:1",
	"gs://bucket/t?access_token=SECRETTOK18",
	"gs://bucket/t?universe_domain=u:SECRETPW19@example.com",
	"azblob://container/t?storage_account=acct&sig=SECRETSAS20&se=2030-01-01",
	"azblob://u:SECRETPW21@container/t",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&token=a%ZZSECRET22",
	"s3://bucket/t?endpoint=http://[::1:SECRETPW23@127.0.0.1:1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&%ZZSECRET24=1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&" + strings.Repeat("x", 70) + "SECRET25",
}

// noSecret fails when s shows any part of a secret of the hostile locations.
func noSecret(t *testing.T, where, loc, s string) {
	t.Helper()
	if strings.Contains(s, "SECRET") {
		t.Errorf("%s of %q shows a secret: %s", where, loc, s)
	}
}

// Every place the storage package prints a location: the redactor itself, the
// parsed Location, ParseLocation's and OpenURL's / CreateURL's errors (here without
// backends: ErrUnknownScheme's message; cmd/skiplake's TestNoSecretInMessages opens
// them with every backend, reads and writes). No secret survives any of them.
func TestNoSecretInStorageMessages(t *testing.T) {
	ctx := context.Background()
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	for _, loc := range hostileLocations {
		noSecret(t, "RedactLocation", loc, storage.RedactLocation(loc))
		l, err := storage.ParseLocation(loc)
		if err != nil {
			noSecret(t, "ParseLocation's error", loc, err.Error())
			if strings.Contains(loc, "@") && strings.Contains(loc, "SECRETPW") && !errors.Is(err, storage.ErrCredentialsInURL) && !errors.Is(err, storage.ErrUnknownScheme) {
				t.Errorf("ParseLocation(%q) = %v, want ErrCredentialsInURL", loc, err)
			}
			continue
		}
		if strings.Contains(strings.SplitN(loc, "?", 2)[0], "@") {
			t.Errorf("ParseLocation(%q) accepted user information", loc)
		}
		noSecret(t, "Location.String", loc, l.String())
		if l.URL != nil {
			noSecret(t, "RedactURL", loc, storage.RedactURL(l.URL))
		}
		for name, open := range map[string]func(context.Context, string) (storage.Storage, error){"OpenURL": storage.OpenURL, "CreateURL": storage.CreateURL} {
			st, err := open(ctx, loc)
			if err != nil {
				noSecret(t, name+"'s error", loc, err.Error())
				continue
			}
			noSecret(t, "the store's name", loc, storage.Describe(st))
			// The GCS client retries a refused connection until its context ends.
			octx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = st.Get(octx, "_delta_log/00000000000000000000.json")
			if err != nil {
				noSecret(t, "a read's error", loc, err.Error())
			}
			err = st.PutIfAbsent(octx, "x", []byte("x"))
			if err != nil {
				noSecret(t, "a write's error", loc, err.Error())
			}
			cancel()
			storage.Close(st)
		}
	}
}

// What the redactor keeps: the scheme, bucket, path and allowed parameters with their
// values (an endpoint without credentials), the names of other parameters, their order.
func TestRedactLocationKeepsWhatIsNotSecret(t *testing.T) {
	for in, want := range map[string]string{
		"/data/t": "/data/t",
		"s3://bucket/tables/events?region=eu-west-1&endpoint=http://127.0.0.1:7070&use_path_style=true": "s3://bucket/tables/events?region=eu-west-1&endpoint=http://127.0.0.1:7070&use_path_style=true",
		"s3://u:p@bucket/t":                               "s3://REDACTED@bucket/t",
		"s3://bucket/t?sig=abc&region=r":                  "s3://bucket/t?sig=REDACTED&region=r",
		"s3://bucket/t?endpoint=http://u:p@h:1":           "s3://bucket/t?endpoint=http://REDACTED@h:1",
		"s3://bucket/t?endpoint=http://h:1/?tok=x":        "s3://bucket/t?endpoint=http://h:1/?tok=REDACTED",
		"s3://bucket/t#frag":                              "s3://bucket/t#REDACTED",
		"s3://bucket/t?flag":                              "s3://bucket/t?REDACTED",
		"azblob://c/t?storage_account=acct&sv=2021&sig=x": "azblob://c/t?storage_account=acct&sv=REDACTED&sig=REDACTED",
		"s3:u:p@bucket":                                   "s3:REDACTED@bucket",
		"gs://bucket/t?universe_domain=example.com":       "gs://bucket/t?universe_domain=example.com",
	} {
		if got := storage.RedactLocation(in); got != want {
			t.Errorf("RedactLocation(%q) = %q, want %q", in, got, want)
		}
	}
	msg := `Get "http://AKIDX:***@h:1/b?list-type=2": dial tcp: refused; parse "http://u:p/w@h": bad`
	if got, want := storage.RedactText(msg), `Get "http://REDACTED@h:1/b?list-type=2": dial tcp: refused; parse "http://u:p/w@h": bad`; got != want {
		t.Errorf("RedactText:\n got %q\nwant %q", got, want)
	}
}

// FuzzRedactLocation: a secret placed in the user information, in a parameter off
// the allow-list, in user information nested in an allowed parameter, or in the
// fragment never survives RedactLocation, and LocationSecrets names it. Secrets that
// also occur in the location's public parts (a password equal to the bucket name) are
// not secrets of the location and are skipped.
func FuzzRedactLocation(f *testing.F) {
	for _, s := range []string{"pw-SECRET", "a/b", "%41", "x@y", "000000", "é", "a&b=c", "#"} {
		for where := range uint8(5) {
			f.Add(s, "bucket", "t/p", where)
		}
	}
	f.Fuzz(func(t *testing.T, secret, bucket, path string, where uint8) {
		if secret == "" || !validHost(bucket) {
			return
		}
		build := func(sec string) string {
			u := &url.URL{Scheme: "s3", Host: bucket, Path: "/" + path}
			q := "region=r"
			switch where % 5 {
			case 0:
				u.User = url.UserPassword("user", sec)
			case 1:
				u.User = url.User(sec)
			case 2:
				q += "&token=" + url.QueryEscape(sec)
			case 3:
				q += "&endpoint=" + url.QueryEscape((&url.URL{Scheme: "http", Host: "h:1", User: url.UserPassword("u", sec)}).String())
			case 4:
				u.Fragment = sec
			}
			u.RawQuery = q
			return u.String()
		}
		loc := build(secret)
		skeleton := storage.RedactLocation(build("\x00"))
		forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), (&url.URL{User: url.User(secret)}).User.String()}
		for _, form := range forms {
			if strings.Contains(skeleton, form) || strings.Contains(build("\x00"), form) {
				return // the secret is also a public part of the location
			}
		}
		got := storage.RedactLocation(loc)
		for _, form := range forms {
			if strings.Contains(got, form) {
				t.Fatalf("RedactLocation(%q) = %q shows the secret %q (as %q)", loc, got, secret, form)
			}
		}
		if l, err := storage.ParseLocation(loc); err == nil && l.URL != nil {
			if s := l.String(); strings.Contains(s, secret) {
				t.Fatalf("Location.String of %q = %q shows the secret", loc, s)
			}
		}
		found := false
		for _, s := range storage.LocationSecrets(loc) {
			found = found || s == secret
		}
		if !found {
			t.Fatalf("LocationSecrets(%q) = %q lacks %q", loc, storage.LocationSecrets(loc), secret)
		}
	})
}

// validHost reports a bucket name url.URL prints as it is.
func validHost(h string) bool {
	if h == "" || len(h) > 63 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
