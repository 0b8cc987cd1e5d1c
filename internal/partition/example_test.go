package partition_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/value"
)

// A timestamp partition value as it appears in the log (ISO 8601 in UTC), in the
// directory name (as Spark names it) and in add.path; either spelling reads back.
func Example() {
	v := value.Timestamp(1631099471000000)
	s, _, err := partition.Format(v, "timestamp")
	if err != nil {
		panic(err)
	}
	d, _, err := partition.DirValue(v, "timestamp")
	if err != nil {
		panic(err)
	}
	dir, err := partition.DirName([]string{"ts", "n"}, []string{d, ""}, []bool{false, true})
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	fmt.Println(dir)
	fmt.Println(partition.EncodeLogPath(dir + "/part-0.parquet"))

	back, err := partition.Parse("2021-09-08T11:11:11.000Z", true, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
	if err != nil {
		panic(err)
	}
	fmt.Println(value.Equal(v, back))
	// Output:
	// 2021-09-08T11:11:11.000000Z
	// ts=2021-09-08 11%3A11%3A11/n=__HIVE_DEFAULT_PARTITION__
	// ts=2021-09-08%2011%253A11%253A11/n=__HIVE_DEFAULT_PARTITION__/part-0.parquet
	// true
}
