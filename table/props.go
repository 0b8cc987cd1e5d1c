package table

import "encoding/json"

// jsonString renders v as JSON text: commitInfo.operationParameters values are JSON
// documents stored as strings, as Spark writes them.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `""`
	}
	return string(b)
}
