package interop

import (
	"database/sql"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

func TestDuckDBProbe(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("select version()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Log(v)
}
