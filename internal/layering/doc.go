// Package layering holds the test that keeps skiplake's package layering true: every
// package of the module sits on one floor of the table in docs/architecture.md, and a
// package imports only packages on lower floors. The package has no code of its own;
// its test parses the table, lists the module's packages and their imports with
// `go list`, and fails on a package without a floor, a floor entry naming no package,
// or an import that goes sideways or up.
package layering
