package bloom

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Table properties that configure the Bloom filter index. Writers (append,
// OPTIMIZE) read them with ColumnsFromProperties.
const (
	// PropColumns lists the columns (comma-separated top-level data columns, matched
	// case-insensitively) that get a Bloom filter per data file, both in skiplake's
	// index and natively in the Parquet files.
	PropColumns = "skiplake.bloomFilter.columns"
	// PropFPP is the filters' false-positive probability, in [MinFPP, MaxFPP]
	// (default DefaultFPP).
	PropFPP = "skiplake.bloomFilter.fpp"
)

// ColumnsFromProperties returns the Bloom-indexed columns named by a table's
// PropColumns property, resolved against data (the data columns of the table, i.e.
// without partition columns) with ResolveColumn, in property order without
// duplicates, and the false-positive probability of PropFPP (DefaultFPP when
// absent). Property keys are matched exactly first, then case-insensitively.
// An unknown column fails with ErrInvalidArgument, a column of a type the index
// cannot encode with ErrUnsupportedType, a malformed or out-of-range rate with
// ErrInvalidArgument; every error names the property.
func ColumnsFromProperties(props map[string]string, data *arrow.Schema) ([]string, float64, error) {
	fpp := DefaultFPP
	if s, ok := lookupProp(props, PropFPP); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(f >= MinFPP && f <= MaxFPP) {
			return nil, 0, fmt.Errorf("%w: table property %s=%q: want a rate in [%g, %g]", ErrInvalidArgument, PropFPP, s, MinFPP, MaxFPP)
		}
		fpp = f
	}
	raw, _ := lookupProp(props, PropColumns)
	var cols []string
	seen := map[string]bool{}
	for _, c := range strings.Split(raw, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		name, err := ResolveColumn(data, c)
		if err != nil {
			return nil, 0, fmt.Errorf("table property %s: %w", PropColumns, err)
		}
		if !seen[name] {
			seen[name] = true
			cols = append(cols, name)
		}
	}
	return cols, fpp, nil
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
		return "", fmt.Errorf("%w: column %q has type %s; Bloom filters need a primitive column", ErrUnsupportedType, f.Name, f.Type)
	}
	return f.Name, nil
}

func lookupProp(props map[string]string, key string) (string, bool) {
	if v, ok := props[key]; ok {
		return v, true
	}
	for k, v := range props {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}
