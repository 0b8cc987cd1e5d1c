package storage

import (
	"context"
	"testing"
)

// storageOnly hides every method but those of Storage.
type storageOnly struct{ Storage }

// TestCreateObjectDispatch: CreateObject uses a store's own Create when it has one and
// the buffering fallback otherwise.
func TestCreateObjectDispatch(t *testing.T) {
	ctx := context.Background()
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	native, err := CreateObject(ctx, l, "native")
	if err != nil {
		t.Fatal(err)
	}
	defer native.Abort()
	if _, ok := native.(*localWriter); !ok {
		t.Fatalf("CreateObject(Local) = %T, want the streaming *localWriter", native)
	}
	fallback, err := CreateObject(ctx, storageOnly{l}, "fallback")
	if err != nil {
		t.Fatal(err)
	}
	defer fallback.Abort()
	if _, ok := fallback.(*bufferWriter); !ok {
		t.Fatalf("CreateObject(store without Create) = %T, want the buffering *bufferWriter", fallback)
	}
}
