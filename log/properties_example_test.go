package log_test

import (
	"errors"
	"fmt"

	"github.com/skiplake/skiplake/log"
)

// Sizes take binary units; intervals Delta's (Spark's) interval syntax.
func ExampleParseSize() {
	n, err := log.ParseSize("128MiB")
	fmt.Println(n, err)
	_, err = log.ParseSize("1.5mb")
	fmt.Println(errors.Is(err, log.ErrInvalidValue))
	// Output:
	// 134217728 <nil>
	// true
}

func ExampleParseInterval() {
	for _, s := range []string{"interval 7 days", "2 weeks", "interval 1 day 12 hours", "168h"} {
		d, err := log.ParseInterval(s)
		fmt.Println(d, err)
	}
	_, err := log.ParseInterval("interval 1 month")
	fmt.Println(err)
	// Output:
	// 168h0m0s <nil>
	// 336h0m0s <nil>
	// 36h0m0s <nil>
	// 168h0m0s <nil>
	// log: invalid value: interval "interval 1 month": months are not accepted (their length varies); use days instead, e.g. 365 days
}

// Properties being set are validated and stored under their canonical spelling;
// unknown delta.* keys are refused.
func ExampleNormalizeProperties() {
	n, err := log.NormalizeProperties(map[string]string{"DELTA.TARGETFILESIZE": "1mb", "delta.appendonly": "TRUE"})
	fmt.Println(n.Set, err)
	_, err = log.NormalizeProperties(map[string]string{"delta.targetFileSizes": "1mb"})
	fmt.Println(errors.Is(err, log.ErrUnknownProperty))
	// Output:
	// map[delta.appendOnly:true delta.targetFileSize:1048576] <nil>
	// true
}

// Reads use the typed, parsed properties (one parse per snapshot with
// Snapshot.Properties).
func ExampleParseTableProperties() {
	p := log.ParseTableProperties(map[string]string{"delta.targetFileSize": "1048576", "delta.TargetFileSize": "8mb"})
	fmt.Println(p.TargetFileSize, p.CheckpointInterval, p.DeletedFileRetention)
	// Output: 1048576 10 168h0m0s
}

// Turning on deletion vectors on a legacy reader 1 / writer 2 table moves it to
// table features, listing the features writer 2 implied.
func ExampleApplyPropertyChange() {
	md := log.Metadata{ID: "x", SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`}
	p, md, err := log.ApplyPropertyChange(log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, md,
		log.PropertyChange{Set: map[string]string{"delta.enableDeletionVectors": "true"}})
	fmt.Println(p.MinReaderVersion, p.MinWriterVersion, p.ReaderFeatures, p.WriterFeatures, md.Configuration, err)
	// Output: 3 7 [deletionVectors] [appendOnly invariants deletionVectors] map[delta.enableDeletionVectors:true] <nil>
}
