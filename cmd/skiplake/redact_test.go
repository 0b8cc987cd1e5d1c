package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// hostileLocations carry credentials everywhere a URL can hold one (the list of
// storage's TestNoSecretInStorageMessages, which cannot import the backends). Every
// secret contains "SECRET", which no message does otherwise; the S3 ones name an
// endpoint that refuses connections.
var hostileLocations = []string{
	"s3://AKIAUSERSECRET1:SECRETPW1@bucket/t?endpoint=http://127.0.0.1:1",
	"s3://bucket/t?endpoint=http://u:SECRETPW2@127.0.0.1:1",
	"s3://bucket/t?endpoint=http://USERSECRET2b@127.0.0.1:1",
	"s3://bucket/t?endpoint=http%3A%2F%2Fu%3ASECRETPW3%40127.0.0.1%3A1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&sig=SECRETSIG4&region=us-east-1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&X-Amz-Signature=SECRETSIG5&X-Amz-Credential=AKIA%2FSECRET5",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&access_token=SECRETTOK6",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&aws_secret_access_key=SECRETKEY7",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&use_path_style=true#SECRETFRAG8",
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
	"azblob://container/t?storage_account=acct&sig=SECRETSAS20&se=2030-01-01",
	"azblob://u:SECRETPW21@container/t",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&token=a%ZZSECRET22",
	"s3://bucket/t?endpoint=http://[::1:SECRETPW23@127.0.0.1:1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&%ZZSECRET24=1",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&" + strings.Repeat("x", 70) + "SECRET25",
	"s3://bucket/t?endpoint=http://127.0.0.1:1&use_path_style=true&sig=SECRETSIG26",
}

// TestNoSecretInMessages: a table of hostile locations × every place a location is
// printed — the CLI's stdout and stderr for commands that open, scan, write and
// create; the library's errors from opening, creating and writing a table, and from
// the stores' reads and writes with every backend linked in — shows no secret
// (issue 31 item 5).
func TestNoSecretInMessages(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("id,v\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commands := [][]string{
		{"create", "LOC", "--schema", "id bigint, v bigint"},
		{"append", "LOC", in},
		{"scan", "LOC", "--filter", "id = 1"},
		{"describe", "LOC"},
		{"count", "LOC"},
		{"files", "LOC"},
		{"delete", "LOC", "--where", "id = 1"},
		{"update", "LOC", "--set", "v = 1"},
		{"merge", "LOC", in, "--on", "id"},
		{"optimize", "LOC"},
		{"vacuum", "LOC"},
		{"maintain", "LOC"},
		{"history", "LOC"},
		{"alter", "LOC", "--set-property", "delta.appendOnly=false"},
		{"checkpoint", "LOC"},
		{"scan", "--bad-flag", "LOC"},
	}
	noSecret := func(where, loc, s string) {
		t.Helper()
		if strings.Contains(s, "SECRET") {
			t.Errorf("%s for %q shows a secret:\n%s", where, loc, s)
		}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, loc := range hostileLocations {
		for _, c := range commands {
			args := append([]string(nil), c...)
			for i, a := range args {
				if a == "LOC" {
					args[i] = loc
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var out, errb bytes.Buffer
			code := run(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, args)
			cancel()
			if code == 0 {
				t.Errorf("skiplake %s succeeded on a hostile location", strings.Join(args, " "))
			}
			noSecret("skiplake "+c[0]+" stdout", loc, out.String())
			noSecret("skiplake "+c[0]+" stderr", loc, errb.String())
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := table.OpenURL(ctx, loc); err != nil {
			noSecret("table.OpenURL's error", loc, err.Error())
		}
		if _, err := table.CreateURL(ctx, loc, schema, table.CreateOptions{}); err != nil {
			noSecret("table.CreateURL's error", loc, err.Error())
		}
		if st, err := storage.OpenURL(ctx, loc); err != nil {
			noSecret("storage.OpenURL's error", loc, err.Error())
		} else {
			noSecret("the store's name", loc, storage.Describe(st))
			octx, ocancel := context.WithTimeout(ctx, 2*time.Second)
			if _, err := st.Get(octx, "_delta_log/00000000000000000000.json"); err != nil {
				noSecret("a read's error", loc, err.Error())
			}
			if err := st.PutIfAbsent(octx, "_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
				noSecret("a commit's error", loc, err.Error())
			}
			if w, err := storage.CreateObject(octx, st, "part-0.parquet"); err != nil {
				noSecret("a data file's create error", loc, err.Error())
			} else if err := w.Commit(); err != nil {
				noSecret("a data file's commit error", loc, err.Error())
			}
			ocancel()
			storage.Close(st)
		}
		cancel()
	}
}

// The CLI's last line of defence: a library message that prints an argument's secret
// its own way (here: decoded, inside free text) loses it on stderr.
func TestRedactorRemovesArgumentSecrets(t *testing.T) {
	r := newRedactor([]string{"scan", "s3://bucket/t?endpoint=http://h:1&tok=abc%2Fdef&x=ab", "--filter", "a = 1"})
	for in, want := range map[string]string{
		`lookup failed for token abc/def`:           `lookup failed for token REDACTED`,
		`raw abc%2Fdef`:                             `raw REDACTED`,
		`Get "http://AKID:***@h:1/b": refused`:      `Get "http://REDACTED@h:1/b": refused`,
		`a two-letter value "ab" is not replaced`:   `a two-letter value "ab" is not replaced`,
		`s3://bucket/t?endpoint=http://h:1&tok=abc`: `s3://bucket/t?endpoint=http://h:1&tok=abc`,
	} {
		if got := r.text(in); got != want {
			t.Errorf("redact %q = %q, want %q", in, got, want)
		}
	}
}
