package tableview

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
)

// Values of the _change_type column (PROTOCOL.md "Change Data Files").
const (
	ChangeInsert          = "insert"
	ChangeDelete          = "delete"
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
)

// ChangeTypeField is the _change_type column of change data files: a string, as
// Delta Spark writes it (nullable in the files; never null in a change read).
var ChangeTypeField = arrow.Field{Name: log.ChangeTypeColumn, Type: arrow.BinaryTypes.String, Nullable: true}

// WritesChangeData reports whether writers that change rows must record them in
// change data files: delta.enableChangeDataFeed=true and the changeDataFeed writer
// feature in the protocol (implied by legacy writer versions 4-6). PROTOCOL.md
// ("Writer Requirements for AddCDCFile") asks writers to respect the property only
// then.
func (v *View) WritesChangeData() bool {
	return v.props.EnableChangeDataFeed && slices.Contains(log.WriterFeatures(v.snap.Protocol()), log.FeatureChangeDataFeed)
}

// ChangeFileSpec returns the writer settings of the table's change data files: the
// data columns followed by ChangeTypeField, under the files' physical names and
// field ids (the data files' FileSpec, so a change file reads like a data file of
// the same version), named cdc-NNNNN-<uuid>, without Delta statistics (a cdc action
// carries none) or Bloom filters; the codec, target file size and row groups of the
// data files. The Parquet footers keep their row-group statistics and page index,
// which change reads skip with.
func (v *View) ChangeFileSpec(opts FileOptions) (datafile.Spec, error) {
	opts.RowTracking = false
	opts.BloomColumns = nil
	spec, err := v.FileSpec(opts)
	if err != nil {
		return datafile.Spec{}, err
	}
	spec.Schema = arrow.NewSchema(append(slices.Clone(v.data.Fields()), ChangeTypeField), nil)
	spec.FileSchema = arrow.NewSchema(append(slices.Clone(v.physData.Fields()), ChangeTypeField), nil)
	spec.Stats = stats.Config{NumIndexedCols: stats.IndexNoColumns}
	spec.BloomColumns = nil
	spec.DataChange = false
	spec.NamePrefix = "cdc"
	return spec, nil
}
