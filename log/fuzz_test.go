package log

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzParseCommit checks that the commit parser never panics, that every
// error wraps ErrCorruptLog and names the file, and that what it accepts
// re-encodes to lines it parses back to the same actions.
func FuzzParseCommit(f *testing.F) {
	seeds := []string{
		`{"commitInfo":{"timestamp":1,"operation":"WRITE","operationParameters":{"mode":"Append"}}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":["p"],"configuration":{"a":"b"},"createdTime":1}}`,
		`{"add":{"path":"p=a%20b/f.parquet","partitionValues":{"p":null},"size":1,"modificationTime":2,"dataChange":true,"stats":"{\"numRecords\":1}","deletionVector":{"storageType":"u","pathOrInlineDv":"abc","offset":1,"sizeInBytes":3,"cardinality":1}}}`,
		`{"remove":{"path":"f","deletionTimestamp":3,"dataChange":false,"extendedFileMetadata":true,"partitionValues":{},"size":4}}`,
		`{"txn":{"appId":"a","version":1,"lastUpdated":2}}` + "\n" + `{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}`,
		`{"cdc":{"path":"c","partitionValues":{},"size":1,"dataChange":false}}`,
		`{"sidecar":{"path":"s.parquet","sizeInBytes":1,"modificationTime":1}}` + "\n" + `{"checkpointMetadata":{"version":1}}`,
		`{"unknown":{}}` + "\n\n",
		`{"add":{}}`,
		`not json`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		acts, err := ParseCommit("fuzz.json", bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error does not wrap ErrCorruptLog or name the file: %v", err)
			}
			return
		}
		for i := range acts {
			if acts[i].count() != 1 {
				t.Fatalf("action %d has %d fields", i, acts[i].count())
			}
			if acts[i].Add != nil {
				_ = acts[i].Add.Key()
				_, _ = acts[i].Add.DecodedPath()
			}
			if acts[i].Remove != nil {
				_ = acts[i].Remove.Key()
			}
		}
		out, err := MarshalActions(acts)
		if err != nil {
			return // e.g. values that encoding/json cannot re-encode
		}
		back, err := ParseCommit("again.json", bytes.NewReader(out))
		if err != nil {
			t.Fatalf("re-encoded commit does not parse: %v\n%s", err, out)
		}
		if len(back) != len(acts) {
			t.Fatalf("re-encoded %d actions, parsed %d", len(acts), len(back))
		}
		again, err := MarshalActions(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("encoding is not stable:\n%s\n%s", out, again)
		}
	})
}

// FuzzParseSchema checks that the schema parser never panics, errors wrap
// ErrInvalidSchema, and accepted schemas round-trip exactly through JSON.
func FuzzParseSchema(f *testing.F) {
	f.Add(nestedSchema)
	f.Add(testSchema)
	f.Add(`{"type":"struct","fields":[{"name":"d","type":"decimal","nullable":true,"metadata":{}}]}`)
	f.Add(`{"type":"struct","fields":[]}`)
	f.Add(`{"type":"struct","fields":[{"name":"a","type":{"type":"map","keyType":"string","valueType":"long"}}]}`)
	f.Add(`"long"`)
	f.Add(`{`)
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseSchema(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("error does not wrap ErrInvalidSchema: %v", err)
			}
			return
		}
		j := st.JSON()
		again, err := ParseSchema(j)
		if err != nil {
			t.Fatalf("rendered schema does not parse: %v\n%s", err, j)
		}
		if again.JSON() != j {
			t.Fatalf("round trip not exact:\n%s\n%s", j, again.JSON())
		}
		if as, err := ToArrow(st, ArrowOptions{PhysicalNames: true, FieldIDs: true}); err == nil {
			if _, err := FromArrow(as); err != nil {
				t.Fatalf("FromArrow(ToArrow(s)): %v", err)
			}
		}
	})
}
