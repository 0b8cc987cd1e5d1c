package bloom

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// Table properties that configure the Bloom filter index. Their values are
// parsed and validated by package log (log.TableProperties.BloomFilterColumns and
// BloomFilterFPP); writers resolve the columns with ResolveColumns.
const (
	// PropColumns lists the columns (comma-separated top-level data columns, matched
	// case-insensitively) that get a Bloom filter per data file, both in skiplake's
	// index and natively in the Parquet files.
	PropColumns = "skiplake.bloomFilter.columns"
	// PropFPP is the filters' false-positive probability, in [MinFPP, MaxFPP]
	// (default DefaultFPP).
	PropFPP = "skiplake.bloomFilter.fpp"
)

// ResolveColumns resolves each name with ResolveColumn against data (the data
// columns of a table, without partition columns) and returns the columns in the
// schema's spelling, in the given order without duplicates. The first failure is
// returned (ErrInvalidArgument for an unknown column, ErrUnsupportedType for a
// column that cannot be indexed).
func ResolveColumns(data *arrow.Schema, names []string) ([]string, error) {
	var cols []string
	seen := map[string]bool{}
	for _, c := range names {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		name, err := ResolveColumn(data, c)
		if err != nil {
			return nil, err
		}
		if !seen[name] {
			seen[name] = true
			cols = append(cols, name)
		}
	}
	return cols, nil
}

// ResolveColumn matches name to a top-level field of data (exactly, else
// case-insensitively) and returns the field's own spelling. The field must have a
// type a Builder can index (see Builder.AddArray): an unknown name fails with
// ErrInvalidArgument (listing the columns there are), a nested or otherwise
// unsupported type with ErrUnsupportedType.
func ResolveColumn(data *arrow.Schema, name string) (string, error) {
	if data == nil {
		return "", fmt.Errorf("%w: nil schema", ErrInvalidArgument)
	}
	idx := -1
	if ix := data.FieldIndices(name); len(ix) > 0 {
		idx = ix[0]
	} else {
		for i, f := range data.Fields() {
			if strings.EqualFold(f.Name, name) {
				idx = i
				break
			}
		}
	}
	if idx < 0 {
		have := make([]string, 0, data.NumFields())
		for _, f := range data.Fields() {
			have = append(have, f.Name)
		}
		return "", fmt.Errorf("%w: column %q is not a top-level data column (columns: %s)", ErrInvalidArgument, name, strings.Join(have, ", "))
	}
	f := data.Field(idx)
	if _, _, err := arrowKind(f.Type); err != nil {
		return "", fmt.Errorf("%w: column %q has type %s; Bloom filters need a primitive column", ErrUnsupportedType, f.Name, value.DisplayType(f.Type))
	}
	return f.Name, nil
}
