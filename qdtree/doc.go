// Package qdtree builds workload-aware layouts: a binary tree of cuts drawn from
// the boundaries of a workload's filters (Yang et al., "Qd-tree: Learning Data
// Layouts for Big Data Analytics", SIGMOD 2020, greedy construction), whose
// leaves are the files of the layout. A query then reads the files whose rows'
// minimum and maximum may satisfy it, exactly as Delta statistics decide; a tree
// that cuts where the queries cut lets most of them read little more than the
// rows they need.
//
// Build takes a sample of the table's rows and a workload (package workload) and
// returns a Tree with a given number of leaves, each holding about the same share
// of rows (within Options.Tolerance and Options.Oversize). Cuts are scored
// against the workload's queries and against a workload fitted to them
// (Options.Fit): the queries grouped by the columns they constrain, each
// column's range drawn independently from the group's, ranges on continuous
// columns at any position, so that a hundred training queries stand for the
// distribution they were drawn from rather than for their exact bounds. Besides
// the greedy tree, Build builds nested grids whose per-column slab counts fit
// the fitted workload (Options.Grids) and keeps a grid when it reads less under
// two-fold cross-validation over the queries. Options.Robustness blends generic box
// queries on the cut columns into the workload, so that queries the workload did
// not show keep some skipping. Encode/Decode persist a Tree as JSON (cuts as
// filter text, `l_shipdate < DATE '1995-03-01'`, and the training workload);
// Tree.Router binds it to a schema and routes Arrow rows to leaves; Tree.Drift
// estimates how a later workload fares on the tree compared with the training
// one. Tree.Extend refines a tree below chosen leaves by trees built on their
// rows: the next generation of a lineage (format version ExtendedVersion), whose
// nodes keep stable keys (Tree.NodeKey) so that files laid out by an earlier
// generation still name their node.
//
// # Invariants
//
//   - Q1 (partition) every row, NULLs included, is routed to exactly one leaf; a
//     row goes left at a node exactly when the node's cut (as filter text) is
//     TRUE for it or its cut column is NULL.
//   - Q2 (units) the leaves' units sum to Options.Leaves, and every leaf of one
//     unit holds between (1-Tolerance) and (1+Oversize) times its share of the
//     sample's rows (a leaf whose rows are equal on every cut column may hold
//     several units), greedy tree or grid alike.
//   - Q3 (sound prediction) the slot-space test a query uses to decide that a
//     leaf cannot match is never wrong: each query is over-approximated (OR of at
//     most 64 boxes, NOT IN / <> / NOT LIKE / column comparisons unconstrained),
//     never under-approximated.
//   - Q4 (determinism) equal samples, workloads and options give equal trees
//     (the fitted workload, the grids and the cross-validation that picks
//     between them draw on nothing else).
//   - Q5 (decode) Decode accepts only trees in preorder with consistent children,
//     leaf ordinals and cuts (and, for extended trees, unique keys and a
//     lineage), so routing always terminates.
//   - Q6 (refinement) a row routes, in an extension, to a leaf under the node
//     with the key of the node it routed to before.
//
// # What it does not do
//
// It reads no files and writes none (package optimize writes the layout and
// persists the tree), does not cut on nested columns, and does not estimate row
// counts of the full table (callers scale the sample).
package qdtree
