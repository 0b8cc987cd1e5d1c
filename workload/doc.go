// Package workload is the query side of workload-aware layouts: a workload is
// the set of filters a table is read with, each with a weight (how often, or how
// much, it matters). Layout advice (package advise) and the workload layout of
// OPTIMIZE (package qdtree, optimize.CurveWorkload) are computed from one.
//
// # File format
//
// A workload file is UTF-8 text, one filter per line, in the filter grammar of
// package expr (the same text `skiplake scan --filter` takes):
//
//	# lines starting with '#' or '--' are comments; blank lines are ignored
//	l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-04-01'
//	25: l_partkey BETWEEN 1000 AND 2000 AND l_receiptdate >= DATE '1998-01-01'
//
// A line may start with a weight: a positive decimal number followed by a colon
// ("25: ..."); without one the weight is 1. Filters that are equal after parsing
// (package expr's canonical rendering) are different queries of the file all the
// same: Parse keeps them in order. Errors name the file, line and column.
//
// # Recording
//
// A Recorder collects the filters a program's scans use (table.Table.ObserveFilters
// calls it for every scan and count with a filter), counting repeats as weight; it
// writes nothing anywhere. Recorder.Workload turns what it saw into a Workload,
// and Workload.Format writes it back in the file format above.
//
// # Invariants
//
//   - W1 (round trip) Parse(Format(w)) equals w: the same filters (canonical
//     text), weights and order.
//   - W2 (weights) every weight is finite and > 0.
//
// # What it does not do
//
// It does not bind filters to a table (callers bind with expr.Bind when they know
// the schema: Workload.Bind), estimate selectivities, or read query logs of other
// engines.
package workload
