package main

// The CLI serves every table-location scheme: each backend registers itself with
// package storage when imported (library users import only those they need).
import (
	_ "github.com/skiplake/skiplake/storage/azure" // azblob://container/prefix
	_ "github.com/skiplake/skiplake/storage/gcs"   // gs://bucket/prefix
	_ "github.com/skiplake/skiplake/storage/s3"    // s3://bucket/prefix, s3a://
)
