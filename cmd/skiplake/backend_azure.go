//go:build !skiplake_no_azure

package main

import _ "github.com/skiplake/skiplake/storage/azure" // azblob://container/prefix
