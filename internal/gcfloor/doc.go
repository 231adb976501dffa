// Package gcfloor keeps a process's garbage-collection heap goal at or
// above a floor. Go's default goal is twice the live heap, at least 4 MiB:
// a process with a small live heap that allocates a lot per request (the
// MCP SDK decodes every JSON-RPC message through a fresh 32 KiB buffer,
// several times per request) collects every few requests, and on a small
// machine those collections compete with the requests for the CPU. A
// floor trades a bounded amount of memory (the floor) for far fewer
// collections; above the floor the goal is Go's own (GOGC as started).
//
// It does not choose the floor: the command that starts it does
// (`toolmesh mcp --heap-floor`); no library package starts one.
package gcfloor
