// Package layout holds the test that keeps the import rules stated in
// docs/architecture.md: data flows collect -> bundle -> evidence -> rules
// -> report, and the shipped pieces stay small. It has no code of its own.
package layout
