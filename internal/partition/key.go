package partition

import (
	"strconv"
	"strings"
)

// Key returns a canonical string of a file's serialized partition values (as the
// log's add actions hold them) in the order of cols: two files are in the same
// partition exactly when their keys are equal. A nil value and the empty string are
// both null, as in Delta.
func Key(cols []string, values map[string]*string) string {
	var sb strings.Builder
	for _, c := range cols {
		if v := values[c]; v == nil || *v == "" {
			sb.WriteByte('N')
		} else {
			// Length-prefixed, so that values cannot run into each other.
			sb.WriteByte('V')
			sb.WriteString(strconv.Itoa(len(*v)))
			sb.WriteByte(':')
			sb.WriteString(*v)
		}
	}
	return sb.String()
}
