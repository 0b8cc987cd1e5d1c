package table

import (
	"bytes"
	"encoding/json"
)

// jsonString renders v as JSON text: commitInfo.operationParameters values are JSON
// documents stored as strings, as Spark writes them (predicates keep their < > &
// unescaped, as Jackson writes them).
func jsonString(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return `""`
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
