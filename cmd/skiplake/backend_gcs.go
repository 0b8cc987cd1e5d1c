//go:build !skiplake_no_gcs

package main

import _ "github.com/skiplake/skiplake/storage/gcs" // gs://bucket/prefix
