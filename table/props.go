package table

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonString renders v as JSON text: commitInfo.operationParameters values are JSON
// documents stored as strings, as Spark writes them.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `""`
	}
	return string(b)
}

// validateProperties checks the table properties skiplake interprets, so a typo fails
// at create time instead of at the first write.
func validateProperties(props map[string]string) error {
	var problems []string
	for k, v := range props {
		switch strings.ToLower(k) {
		case "delta.targetfilesize":
			if _, err := parseSize(v); err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", k, v, err))
			}
		case "delta.checkpointinterval":
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				problems = append(problems, fmt.Sprintf("%s=%q: want a positive integer", k, v))
			}
		case "delta.dataskippingnumindexedcols":
			if n, err := strconv.Atoi(v); err != nil || n < -1 {
				problems = append(problems, fmt.Sprintf("%s=%q: want an integer >= -1", k, v))
			}
		case "delta.appendonly":
			if v != "true" && v != "false" {
				problems = append(problems, fmt.Sprintf("%s=%q: want true or false", k, v))
			}
		case "delta.columnmapping.mode":
			if v != "none" {
				problems = append(problems, fmt.Sprintf("%s=%q: creating column-mapped tables is not supported", k, v))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: table properties: %s", ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}
