package storage_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/skiplake/skiplake/storage"
)

// Example_local creates a commit file twice with PutIfAbsent: the second writer loses
// with ErrExist, which is how concurrent Delta commits are detected.
func Example_local() {
	dir, err := os.MkdirTemp("", "skiplake-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	s, err := storage.NewLocal(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	ctx := context.Background()
	const commit = "_delta_log/00000000000000000000.json"
	fmt.Println("first:", s.PutIfAbsent(ctx, commit, []byte(`{"commitInfo":{}}`)))
	err = s.PutIfAbsent(ctx, commit, []byte(`{"commitInfo":{"other":true}}`))
	fmt.Println("second lost:", errors.Is(err, storage.ErrExist))

	data, _ := s.Get(ctx, commit)
	fmt.Println("stored:", string(data))

	objs, _ := s.List(ctx, "_delta_log/", "")
	for _, o := range objs {
		fmt.Println(o.Path, o.Size)
	}
	// Output:
	// first: <nil>
	// second lost: true
	// stored: {"commitInfo":{}}
	// _delta_log/00000000000000000000.json 17
}

// ExampleMemory lists a log from a version with a partial-name prefix and startAfter.
func ExampleMemory() {
	s := storage.NewMemory()
	ctx := context.Background()
	for _, p := range []string{
		"_delta_log/00000000000000000009.json",
		"_delta_log/00000000000000000010.checkpoint.parquet",
		"_delta_log/00000000000000000010.json",
		"_delta_log/00000000000000000011.json",
		"part=1/a.parquet",
	} {
		if err := s.Put(ctx, p, []byte("x")); err != nil {
			fmt.Println(err)
		}
	}
	objs, _ := s.List(ctx, "_delta_log/0000000000000000001", "_delta_log/00000000000000000010.checkpoint.parquet")
	for _, o := range objs {
		fmt.Println(o.Path)
	}
	// Output:
	// _delta_log/00000000000000000010.json
	// _delta_log/00000000000000000011.json
}

// ExampleValidatePath shows that decoded Delta paths with odd characters are accepted
// while anything that could leave the root is not.
func ExampleValidatePath() {
	for _, p := range []string{
		"x=A%2FA/part-0.parquet",
		"part=2021-09-08 11:11:11/part-0.parquet",
		"../escape",
		"/etc/passwd",
		"a//b",
	} {
		fmt.Println(storage.ValidatePath(p))
	}
	// Output:
	// <nil>
	// <nil>
	// storage: invalid path "../escape": ".." element at byte 0
	// storage: invalid path "/etc/passwd": is absolute
	// storage: invalid path "a//b": empty element at byte 2
}

// ExampleOpenURL opens a store by location: a plain path or file:// URL is a local
// directory; s3://, gs:// and azblob:// need their backend imported (the CLI imports
// all of them).
func ExampleOpenURL() {
	dir, err := os.MkdirTemp("", "skiplake-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := storage.OpenURL(ctx, "file://"+dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%T\n", st)

	_, err = storage.OpenURL(ctx, "s3://bucket/tables/events")
	fmt.Println(errors.Is(err, storage.ErrUnknownScheme))
	// Output:
	// *storage.Local
	// true
}
