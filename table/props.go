package table

import (
	"bytes"
	"encoding/json"
)

// Operation parameters (log.CommitInfo.OperationParameters) are JSON texts that
// become the values of commitInfo.operationParameters, with the JSON type Delta Spark
// gives each: most are strings (paramString), lists and maps are strings holding their
// JSON (paramJSON: "partitionBy":"[\"a\"]"), a few are numbers, booleans or null
// (their JSON text: strconv, "null").

// paramString is the text of a parameter Delta Spark records as a string.
func paramString(s string) string { return jsonString(s) }

// paramJSON is the text of a parameter Delta Spark records as a string holding v's
// JSON (partitionBy, predicate, properties, ...).
func paramJSON(v any) string { return jsonString(jsonString(v)) }

// paramOptionalString is paramString, or null when s is empty (Spark's Option[String]).
func paramOptionalString(s string) string {
	if s == "" {
		return "null"
	}
	return paramString(s)
}

// nonNilStrings returns s, or an empty list for nil (written [] rather than null).
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nonNilMap returns m, or an empty map for nil (written {} rather than null).
func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// jsonString renders v as JSON text, leaving < > & unescaped as Jackson writes them
// (predicates).
func jsonString(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return `""`
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
