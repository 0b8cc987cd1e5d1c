package bloom_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/value"
)

// Build a filter for one column of one data file, store it in an index file, read
// it back and probe literals.
func Example() {
	b, err := bloom.NewBuilder("user_id", 0, 0.01)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"6f1c0d2e", "a93b77c1", "0b5e4f9a"} {
		if err := b.Add(value.String(id)); err != nil {
			panic(err)
		}
	}
	f, err := b.Finish()
	if err != nil {
		panic(err)
	}

	var buf bytes.Buffer
	if err := bloom.WriteIndex(&buf, bloom.Entry{DataPath: "part-00000.parquet", Filter: f}); err != nil {
		panic(err)
	}
	ix, err := bloom.ReadIndex(buf.Bytes())
	if err != nil {
		panic(err)
	}
	g, ok := ix.Filter("part-00000.parquet", "user_id")
	fmt.Println("covered:", ok, "distinct:", g.Distinct())
	fmt.Println("a93b77c1 might be there:", g.MightContain(value.String("a93b77c1")))
	fmt.Println("IN (ffff, 0b5e4f9a):", bloom.ProbeAny(g, []value.Value{value.String("ffff"), value.String("0b5e4f9a")}))
	// Output:
	// covered: true distinct: 3
	// a93b77c1 might be there: true
	// IN (ffff, 0b5e4f9a): true
}

// A data file names its index file in add.tags under TagKey.
func ExampleEncodeTag() {
	s, err := bloom.EncodeTag(bloom.Tag{Path: "_delta_index/bloom/1b4e28ba-2fa1-11d2-883f-0016d3cca427.bin", Columns: []string{"user_id"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(bloom.TagKey, "=", s)
	t, err := bloom.DecodeTag(s)
	fmt.Println(t.Version, t.HasColumn("user_id"), err)
	// Output:
	// skiplake.bloom = {"v":1,"path":"_delta_index/bloom/1b4e28ba-2fa1-11d2-883f-0016d3cca427.bin","cols":["user_id"]}
	// 1 true <nil>
}

// The planner asks a per-snapshot Cache for the filters of candidate files. Files
// whose index is missing stay "not covered" (nil) and are read.
func ExampleCache_Filters() {
	b, _ := bloom.NewBuilder("id", 0, 0)
	_ = b.Add(value.Int64(42))
	f, _ := b.Finish()
	segment := bloom.IndexDir + "seg-1.bin"
	data, _ := bloom.MarshalIndex(bloom.Entry{DataPath: "a.parquet", Filter: f})
	store := map[string][]byte{segment: data}
	load := func(_ context.Context, path string) ([]byte, error) {
		if d, ok := store[path]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: not found", path)
	}

	tagA, _ := bloom.EncodeTag(bloom.Tag{Path: segment, Columns: []string{"id"}})
	tagB, _ := bloom.EncodeTag(bloom.Tag{Path: bloom.IndexDir + "lost.bin", Columns: []string{"id"}})
	files := []bloom.FileRef{{Path: "a.parquet", Tag: tagA}, {Path: "b.parquet", Tag: tagB}, {Path: "c.parquet"}}

	cache := bloom.NewCache(load, bloom.CacheOptions{})
	filters, warnings, err := cache.Filters(context.Background(), files, "id")
	if err != nil {
		panic(err)
	}
	probe := bloom.NewProbe(value.Int64(7))
	for i, f := range filters {
		fmt.Printf("%s covered=%v keep=%v\n", files[i].Path, f != nil, f.MightContainProbe(&probe))
	}
	fmt.Println(len(warnings), "warning for", warnings[0].DataPath)
	// Output:
	// a.parquet covered=true keep=false
	// b.parquet covered=false keep=true
	// c.parquet covered=false keep=true
	// 1 warning for b.parquet
}

// AppendCanonical shows the bytes a value is hashed as.
func ExampleAppendCanonical() {
	fmt.Printf("%x\n", bloom.AppendCanonical(nil, value.Int64(258)))
	fmt.Printf("%x\n", bloom.AppendCanonical(nil, value.Date(258)))
	fmt.Printf("%x\n", bloom.AppendCanonical(nil, value.String("ab")))
	// Output:
	// 0201000000000000
	// 0201000000000000
	// 6162
}

// Native Parquet Bloom filters sized from per-row-group NDV; a column without an NDV
// gets a size-capped adaptive filter.
func ExampleParquetWriterOptions() {
	opts := bloom.ParquetWriterOptions([]string{"id", "email"}, map[string]int64{"id": 50_000}, 0.01)
	props := parquet.NewWriterProperties(append(opts, parquet.WithMaxRowGroupLength(50_000))...)
	fmt.Println("id:", props.BloomFilterEnabledFor("id"), props.BloomFilterNDVFor("id"), props.BloomFilterFPPFor("id"))
	fmt.Println("email adaptive:", props.AdaptiveBloomFilterEnabledFor("email"))
	fmt.Println("max filter bytes:", props.MaxBloomFilterBytes())
	// Output:
	// id: true 50000 0.01
	// email adaptive: true
	// max filter bytes: 131072
}
