//go:build !skiplake_no_s3

package main

import _ "github.com/skiplake/skiplake/storage/s3" // s3://bucket/prefix, s3a://
