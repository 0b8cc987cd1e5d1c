package log

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckReadable(t *testing.T) {
	cases := []struct {
		name string
		p    Protocol
		bad  []string
	}{
		{"legacy 1/2", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil},
		{"column mapping reader 2", Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, nil},
		{"supported features", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "timestampNtz", "v2Checkpoint", "typeWidening-preview"}}, nil},
		{"reader 99", Protocol{MinReaderVersion: 99, MinWriterVersion: 7}, []string{"minReaderVersion=99"}},
		{"unknown reader feature", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "fancyNew"}}, []string{"fancyNew"}},
		{"variant not supported", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"variantType"}}, []string{"variantType"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckReadable(c.p)
			if c.bad == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ue *UnsupportedFeatureError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupportedFeature) || !ue.Reader {
				t.Fatalf("want reader UnsupportedFeatureError, got %v", err)
			}
			if strings.Join(ue.Features, ",") != strings.Join(c.bad, ",") {
				t.Fatalf("features %v want %v", ue.Features, c.bad)
			}
		})
	}
}

func TestCheckWritable(t *testing.T) {
	plain := `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}`
	withInv := `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{"delta.invariants":"{\"expression\":{\"expression\":\"a > 0\"}}"}}]}`
	generated := `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}},{"name":"g","type":"long","nullable":true,"metadata":{"delta.generationExpression":"a + 1"}}]}`
	identity := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{"delta.identity.start":1,"delta.identity.step":1,"delta.identity.allowExplicitInsert":false}}]}`
	md := func(schema string, cfg map[string]string) Metadata {
		return Metadata{ID: "x", SchemaString: schema, Configuration: cfg}
	}
	cases := []struct {
		name string
		p    Protocol
		md   Metadata
		bad  string
	}{
		{"legacy 1/2 plain", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, md(plain, nil), ""},
		{"legacy 1/3 without constraints", Protocol{MinReaderVersion: 1, MinWriterVersion: 3}, md(plain, nil), ""},
		{"invariants are honoured (package table checks them)", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, md(withInv, nil), ""},
		{"check constraints are honoured", Protocol{MinReaderVersion: 1, MinWriterVersion: 3}, md(plain, map[string]string{"delta.constraints.pos": "a > 0"}), ""},
		{"writer 4 accepted while cdf and generated columns are unused", Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md(plain, nil), ""},
		{"change data feed enabled is written", Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md(plain, map[string]string{"delta.enableChangeDataFeed": "true"}), ""},
		{"change data feed as a table feature is written", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"changeDataFeed"}}, md(plain, map[string]string{"delta.enableChangeDataFeed": "true"}), ""},
		{"generated columns are honoured", Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md(generated, nil), ""},
		{"identity columns are honoured", Protocol{MinReaderVersion: 1, MinWriterVersion: 6}, md(identity, nil), ""},
		{"generated and identity columns as table features", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"generatedColumns", "identityColumns", "checkConstraints"}}, md(identity, nil), ""},
		{"an unknown writer feature is refused", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"noSuchFeature"}}, md(plain, nil), "noSuchFeature"},
		{"legacy column mapping 2/5 accepted (as Spark creates it)", Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, md(plain, map[string]string{"delta.columnMapping.mode": "name"}), ""},
		{"column mapping as a table feature is accepted by the log", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping"}, WriterFeatures: []string{"columnMapping"}}, md(plain, map[string]string{"delta.columnMapping.mode": "id"}), ""},
		{"writer 8 refused", Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, md(plain, nil), "minWriterVersion=8"},
		{"v2 checkpoint accepted (v2 checkpoints are written)", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}, md(plain, nil), ""},
		{"dv + domain metadata accepted", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "domainMetadata", "appendOnly"}}, md(plain, nil), ""},
		{"row tracking accepted (row IDs are assigned)", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"rowTracking", "domainMetadata"}}, md(plain, nil), ""},
		{"clustering and the liquid preview accepted", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"clustering", "liquid", "domainMetadata"}}, md(plain, nil), ""},
		{"unreadable is unwritable", Protocol{MinReaderVersion: 99, MinWriterVersion: 7}, md(plain, nil), "minReaderVersion=99"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckWritable(c.p, c.md)
			if c.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ue *UnsupportedFeatureError
			if !errors.As(err, &ue) || ue.Reader || !strings.Contains(err.Error(), c.bad) {
				t.Fatalf("want writer UnsupportedFeatureError mentioning %q, got %v", c.bad, err)
			}
		})
	}
}

func TestWriterFeaturesLegacy(t *testing.T) {
	got := WriterFeatures(Protocol{MinReaderVersion: 2, MinWriterVersion: 6})
	want := "appendOnly,invariants,checkConstraints,changeDataFeed,generatedColumns,columnMapping,identityColumns"
	if strings.Join(got, ",") != want {
		t.Fatalf("got %v", got)
	}
	if len(SupportedReaderFeatures()) == 0 || len(SupportedWriterFeatures()) == 0 {
		t.Fatal("supported feature lists are empty")
	}
}
