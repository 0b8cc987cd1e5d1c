package layout

import (
	"testing"

	"github.com/google/uuid"
)

func TestVacuumable(t *testing.T) {
	cases := map[string]bool{
		"part-00001-x.parquet":                   true,
		"country=DE/part-1.parquet":              true,
		"_col=1/part-1.parquet":                  true,
		"_delta_index/bloom/a.bin":               true,
		"_delta_log/00000000000000000000.json":   false,
		"_delta_log":                             false,
		"_delta_index/.x":                        false,
		"_delta_index/":                          false,
		".hidden":                                false,
		"_SUCCESS":                               false,
		"a/.tmp/x":                               false,
		"_change_data/cdc-1.parquet":             true,
		"_change_data/p=1/cdc-1.parquet":         true,
		"_change_data/.cdc-1.parquet.crc":        false,
		"_change_data/p=1/_tmp/x.parquet":        false,
		"_change_data/":                          false,
		"x/_change_data/cdc-1.parquet":           false,
		"country=DE/.part-1.parquet.crc":         false,
		"country=DE/_started_123":                false,
		"x/../y":                                 false,
		"deletion_vector_0b8c2a6d-3f3f-4e5e.bin": true,
		"_delta_log/_last_checkpoint":            false,
		"_tmp/part-0.parquet":                    false,
		"_delta_index/_hidden":                   false,
		"p=a/.part-0.parquet.crc":                false,
		"_skiplake_layout/qdtree-0b8c2a6d-3f3f-4e5e-9a4b-1c2d3e4f5a6b.json":     true,
		"_skiplake_layout/qdtree-0b8c2a6d-3f3f-4e5e-9a4b-1c2d3e4f5a6b.json.tmp": false,
		"_skiplake_layout/other.json":                                           false,
		"_skiplake_layout/sub/qdtree-0b8c2a6d-3f3f-4e5e-9a4b-1c2d3e4f5a6b.json": false,
		"_skiplake_layout/.qdtree-0b8c2a6d-3f3f-4e5e-9a4b-1c2d3e4f5a6b.json":    false,
		"_skiplake_layout/": false,
		"x/_skiplake_layout/qdtree-0b8c2a6d-3f3f-4e5e-9a4b-1c2d3e4f5a6b.json": false,
		"_skiplake_layout_x/qdtree-0b8c2a6d-3f3f-4e5e-9a4b-1c2d3e4f5a6b.json": false,
		"_skiplake_layout/qdtree-not-a-uuid-at-all-but-36-chars-long.json":    false,
	}
	for p, want := range cases {
		if got := Vacuumable(p); got != want {
			t.Errorf("Vacuumable(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestWrittenBySkiplake(t *testing.T) {
	const id = "0b8c2a6d-3f3f-4e5e-9a4b-1c2d3e4f5a6b"
	cases := map[string]bool{
		"part-00001-" + id + ".c000.zstd.parquet":                     true,
		"country=DE/part-99999-" + id + ".c000.zstd.parquet":          true,
		"_delta_index/bloom/" + id + ".bin":                           true,
		"part-00001-" + id + "-c000.snappy.parquet":                   false, // Spark's name
		"part-0001-" + id + ".c000.zstd.parquet":                      false,
		"part-00001-" + id[:35] + ".c000.zstd.parquet":                false,
		"part-00001-not-a-uuid-at-all-but-36-chars.c000.zstd.parquet": false,
		"data.csv":                                                false,
		"_delta_index/bloom/x.bin":                                false,
		"_delta_index/other/" + id + ".bin":                       false,
		"input.parquet":                                           false,
		"_skiplake_layout/qdtree-" + id + ".json":                 true,
		"_skiplake_layout/qdtree-" + id + ".json.bak":             false,
		"_skiplake_layout/" + id + ".json":                        false,
		"_change_data/cdc-00001-" + id + ".c000.zstd.parquet":     true,
		"_change_data/p=1/cdc-00002-" + id + ".c000.zstd.parquet": true,
		"_change_data/part-00001-" + id + ".c000.zstd.parquet":    false,
		"cdc-00001-" + id + ".c000.zstd.parquet":                  false,
		"_change_data/cdc-00001-" + id + ".c000.snappy.parquet":   false, // Spark's
	}
	for p, want := range cases {
		if got := WrittenBySkiplake(p); got != want {
			t.Errorf("WrittenBySkiplake(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestTreeFile(t *testing.T) {
	for range 20 {
		p := TreeFile(uuid.New())
		if !IsTreeFile(p) || !Vacuumable(p) || !WrittenBySkiplake(p) {
			t.Fatalf("%s: IsTreeFile %v, Vacuumable %v, WrittenBySkiplake %v", p, IsTreeFile(p), Vacuumable(p), WrittenBySkiplake(p))
		}
	}
}
