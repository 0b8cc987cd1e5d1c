package log

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

func TestActionJSONForms(t *testing.T) {
	cases := []struct {
		name string
		act  Action
		want string
	}{
		{"protocol omits nil features", Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
			`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`},
		{"protocol keeps features", Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{}, WriterFeatures: []string{"appendOnly"}}},
			`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"writerFeatures":["appendOnly"]}}`},
		{"metadata fills required empties", Action{Metadata: &Metadata{ID: "x", SchemaString: "{}"}},
			`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}`},
		{"add writes empty partitionValues and null values", Action{Add: &Add{Path: "a", PartitionValues: map[string]*string{"p": nil}, Size: 1, DataChange: true}},
			`{"add":{"path":"a","partitionValues":{"p":null},"size":1,"modificationTime":0,"dataChange":true}}`},
		{"remove with extended metadata", Action{Remove: &Remove{Path: "a", DeletionTimestamp: ptr(int64(5)), DataChange: true, ExtendedFileMetadata: true, Size: ptr(int64(3))}},
			`{"remove":{"path":"a","deletionTimestamp":5,"dataChange":true,"extendedFileMetadata":true,"partitionValues":{},"size":3}}`},
		{"remove with extended metadata keeps partition values", Action{Remove: &Remove{Path: "a", DeletionTimestamp: ptr(int64(5)), DataChange: true, ExtendedFileMetadata: true, PartitionValues: map[string]*string{"p": ptr("x"), "q": nil}, Size: ptr(int64(3))}},
			`{"remove":{"path":"a","deletionTimestamp":5,"dataChange":true,"extendedFileMetadata":true,"partitionValues":{"p":"x","q":null},"size":3}}`},
		{"remove without extended metadata omits partition values", Action{Remove: &Remove{Path: "a", DeletionTimestamp: ptr(int64(5)), DataChange: true}},
			`{"remove":{"path":"a","deletionTimestamp":5,"dataChange":true}}`},
		{"remove claiming extended metadata without a size drops the claim", Action{Remove: &Remove{Path: "a", DataChange: true, ExtendedFileMetadata: true}},
			`{"remove":{"path":"a","dataChange":true}}`},
		{"txn", Action{Txn: &Txn{AppID: "app", Version: 4}}, `{"txn":{"appId":"app","version":4}}`},
		{"domain metadata", Action{DomainMetadata: &DomainMetadata{Domain: "d", Configuration: "{}"}},
			`{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := MarshalActions([]Action{c.act})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			back, err := ParseCommit("test.json", strings.NewReader(string(b)))
			if err != nil || len(back) != 1 {
				t.Fatalf("parse back: %v %v", back, err)
			}
			again, _ := MarshalActions(back)
			if string(again) != string(b) {
				t.Fatalf("round trip changed the line:\n%s\n%s", again, b)
			}
		})
	}
}

func TestMarshalActionsRejectsAmbiguousAction(t *testing.T) {
	for _, a := range []Action{{}, {Add: &Add{Path: "a"}, Remove: &Remove{Path: "a"}}} {
		if _, err := MarshalActions([]Action{a}); !errors.Is(err, ErrInvalidTransaction) {
			t.Errorf("want ErrInvalidTransaction, got %v", err)
		}
	}
}

func TestParseCommit(t *testing.T) {
	good := `{"commitInfo":{"timestamp":7,"operation":"WRITE","operationParameters":{"mode":"Append","partitionBy":["a"]},"readVersion":3,"isBlindAppend":true,"extra":{"x":1}}}

{"add":{"path":"x%20y.parquet","partitionValues":{"p":null,"q":""},"size":1,"modificationTime":2,"dataChange":true,"newField":1}}
{"unknownAction":{"a":1}}
{"remove":{"path":"z.parquet","dataChange":false}}`
	acts, err := ParseCommit("00.json", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 3 {
		t.Fatalf("got %d actions, want 3 (unknown action ignored)", len(acts))
	}
	ci := acts[0].CommitInfo
	if ci.Timestamp != 7 || ci.Operation != "WRITE" || *ci.ReadVersion != 3 || !*ci.IsBlindAppend {
		t.Errorf("commitInfo typed fields: %+v", ci)
	}
	if ci.OperationParameters["partitionBy"] != `["a"]` || ci.OperationParameters["mode"] != `"Append"` {
		t.Errorf("operationParameters %v", ci.OperationParameters)
	}
	if _, ok := ci.Raw["extra"]; !ok {
		t.Errorf("raw map lost unknown field: %v", ci.Raw)
	}
	add := acts[1].Add
	if p, err := add.DecodedPath(); err != nil || p != "x y.parquet" {
		t.Errorf("decoded path %q %v", p, err)
	}
	for _, col := range []string{"p", "q", "absent"} {
		if _, isNull := add.PartitionValue(col); !isNull {
			t.Errorf("partition %s: want null", col)
		}
	}

	bad := []struct {
		name, input, want string
	}{
		{"not json names line", "{\"add\":{\"path\":\"a\"}}\n{oops\n", "f.json line 2"},
		{"add without path", `{"add":{"size":1}}`, "add without path"},
		{"two actions on one line", `{"add":{"path":"a"},"remove":{"path":"a"}}`, "several actions"},
		{"array line", `[1,2]`, "line 1"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCommit("f.json", strings.NewReader(c.input))
			if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want ErrCorruptLog mentioning %q, got %v", c.want, err)
			}
			if !strings.HasPrefix(err.Error(), "log: ") {
				t.Errorf("error not prefixed: %v", err)
			}
		})
	}
}

func TestDeletionVectorUniqueID(t *testing.T) {
	cases := []struct {
		name string
		dv   *DeletionVectorDescriptor
		want string
	}{
		{"nil has empty id", nil, ""},
		{"uuid with offset", &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: ptr(int32(4))}, "uab^-aqEH.-t@S}K{vb[*k^@4"},
		{"inline without offset", &DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}, "iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"},
	}
	for _, c := range cases {
		if got := c.dv.UniqueID(); got != c.want {
			t.Errorf("%s: got %q want %q", c.name, got, c.want)
		}
	}
}

func TestDecodedPath(t *testing.T) {
	cases := []struct {
		name, in, want string
		err            error
	}{
		{"plain", "a/b.parquet", "a/b.parquet", nil},
		{"percent encoded", "x=A%2FA/part%20one.parquet", "x=A/A/part one.parquet", nil},
		{"colon escaped partition", "ts=2021-09-08%2011%3A11%3A11/f.parquet", "ts=2021-09-08 11:11:11/f.parquet", nil},
		{"s3 uri unsupported", "s3://bucket/a.parquet", "", ErrUnsupportedPath},
		{"file uri unsupported", "file:/tmp/a.parquet", "", ErrUnsupportedPath},
		{"bad escape", "a%zz", "", ErrUnsupportedPath},
		{"partition dir with equals is not a scheme", "a=b:c/f.parquet", "a=b:c/f.parquet", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := (&Add{Path: c.in}).DecodedPath()
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("want %v, got %v", c.err, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q %v, want %q", got, err, c.want)
			}
		})
	}
}

func TestReconciliationKeyUsesDecodedPathAndDV(t *testing.T) {
	a := &Add{Path: "a%20b"}
	b := &Add{Path: "a b"}
	if a.Key() != b.Key() {
		t.Error("encoded and decoded paths must reconcile to one key")
	}
	c := &Add{Path: "a b", DeletionVector: &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "x"}}
	if c.Key() == b.Key() {
		t.Error("a DV must change the key")
	}
	r := &Remove{Path: "a%20b", DeletionVector: c.DeletionVector}
	if r.Key() != c.Key() {
		t.Error("remove and add keys differ for the same file and DV")
	}
}

func TestCommitInfoRoundTripKeepsTypedFields(t *testing.T) {
	in := CommitInfo{Timestamp: 5, Operation: "OPTIMIZE", OperationParameters: map[string]string{"predicate": `[]`},
		OperationMetrics: map[string]string{"numAddedFiles": "1"}, ReadVersion: ptr(int64(2)), IsolationLevel: SnapshotIsolation,
		IsBlindAppend: ptr(false), EngineInfo: "skiplake/x", TxnID: "t"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out CommitInfo
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	out.Raw = nil
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("got %+v want %+v", out, in)
	}
}

// TestCommitInfoParametersWrittenOnce: each operation parameter's JSON text is the
// value in the commit file (Delta Spark's JsonMapSerializer), not a string holding
// it, and reads back as the same text; DisplayParameters is DESCRIBE HISTORY's form.
func TestCommitInfoParametersWrittenOnce(t *testing.T) {
	in := CommitInfo{Operation: "RESTORE", OperationParameters: map[string]string{
		"mode": `"Append"`, "partitionBy": `"[\"a\"]"`, "version": `1`, "timestamp": `null`,
		"auto": `false`, "properties": `"{\"k\":\"v\"}"`, "plain": `not json`,
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"operation":"RESTORE","operationParameters":{"auto":false,"mode":"Append","partitionBy":"[\"a\"]",` +
		`"plain":"not json","properties":"{\"k\":\"v\"}","timestamp":null,"version":1}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var out CommitInfo
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	wantBack := maps.Clone(in.OperationParameters)
	wantBack["plain"] = `"not json"`
	if !reflect.DeepEqual(out.OperationParameters, wantBack) {
		t.Fatalf("read back %v, want %v", out.OperationParameters, wantBack)
	}
	wantShown := map[string]string{"mode": "Append", "partitionBy": `["a"]`, "version": "1", "timestamp": "null",
		"auto": "false", "properties": `{"k":"v"}`, "plain": "not json"}
	if got := out.DisplayParameters(); !reflect.DeepEqual(got, wantShown) {
		t.Fatalf("display %v, want %v", got, wantShown)
	}
}

// TestDisplayParametersOfOlderSkiplakeCommits: commits skiplake wrote before
// parameters were written once hold every value as a string of its JSON text; their
// history shows the values as Spark's do. Another engine's string that looks quoted is
// shown as it is.
func TestDisplayParametersOfOlderSkiplakeCommits(t *testing.T) {
	const old = `{"operation":"RESTORE","operationParameters":{"mode":"\"Append\"","description":"\"\"",` +
		`"partitionBy":"[\"c\"]","version":"1","timestamp":"null"},"engineInfo":"skiplake/0.1.0"}`
	var ci CommitInfo
	if err := json.Unmarshal([]byte(old), &ci); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"mode": "Append", "description": "", "partitionBy": `["c"]`, "version": "1", "timestamp": "null"}
	if got := ci.DisplayParameters(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	spark := strings.Replace(old, `"skiplake/0.1.0"`, `"Apache-Spark/3.5.0 Delta-Lake/3.2.0"`, 1)
	if err := json.Unmarshal([]byte(spark), &ci); err != nil {
		t.Fatal(err)
	}
	if got := ci.DisplayParameters()["mode"]; got != `"Append"` {
		t.Fatalf("another engine's quoted string shown as %q", got)
	}
}

func TestNumRecords(t *testing.T) {
	if n, ok := (&Add{Stats: `{"numRecords":12,"minValues":{}}`}).NumRecords(); !ok || n != 12 {
		t.Errorf("got %d %v", n, ok)
	}
	for _, s := range []string{"", "{}", "not json"} {
		if _, ok := (&Add{Stats: s}).NumRecords(); ok {
			t.Errorf("stats %q: want no numRecords", s)
		}
	}
}

// FuzzAddNumRecords checks Add.NumRecords (with its fast path for the plain form)
// against decoding the stats with encoding/json, the reference.
func FuzzAddNumRecords(f *testing.F) {
	for _, s := range []string{
		`{"numRecords":12,"minValues":{"a":1}}`, `{"minValues":{"numRecords":5}}`, `{"numRecords":1.0}`,
		`{"NumRecords":3}`, `{"numRecords":3,"numrecords":4}`, `{"numRecords":-2}`, `{"numRecords":null}`,
		`{"num\u0052ecords":7}`, `{"numRecords":01}`, `{"numRecords":3`, `[{"numRecords":3}]`,
		`{"a":"numRecords","numRecords":9}`, `{"numRecords" : 123456789012345678 }`, `{"numRecords":1234567890123456789}`,
		`{"a":["x",{"numRecords":1}],"numRecords":2}`, ` {"numRecords":0} `, `{"numRecords":4}x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stats string) {
		got, ok := (&Add{Stats: stats}).NumRecords()
		var want struct {
			NumRecords *int64 `json:"numRecords"`
		}
		err := json.Unmarshal([]byte(stats), &want)
		wok := stats != "" && err == nil && want.NumRecords != nil
		if ok != wok || ok && got != *want.NumRecords {
			t.Fatalf("NumRecords(%q) = %d, %v; encoding/json says %v, %v", stats, got, ok, want.NumRecords, wok)
		}
	})
}
