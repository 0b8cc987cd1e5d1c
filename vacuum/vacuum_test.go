package vacuum

import (
	"testing"

	"github.com/skiplake/skiplake/log"
)

func TestDVPath(t *testing.T) {
	// The example of the Delta protocol (Deletion Vector Descriptor).
	got, err := dvPath(&log.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := dvPath(&log.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "short"}); err == nil {
		t.Fatal("short path accepted")
	}
}
