// Package cli hosts command-line programs as mesh tools. A tools file (see
// LoadFile) declares each tool's spec and its binding (binding.cli, held
// beside the spec in this package, so it never leaves the worker);
// RegisterFile hosts its tools on a worker, each running its bound program
// once per call behind the same worker.Handler interface as Go tools.
//
// It builds each call's argv, applies the argument rules and output
// formats, and shares a tool's slots fairly by sender. Confinement itself
// is internal/sandbox's, keeping programs from outliving the worker
// internal/supervise's, and bridged MCP servers internal/mcp/bridge's.
package cli
