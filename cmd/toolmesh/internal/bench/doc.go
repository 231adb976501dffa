// Package bench is `toolmesh bench` (Command): it measures the mesh beside
// raw NATS, the nats.go micro peer and os/exec on the same server, side by
// side — unary and streaming calls, CLI tools (sandboxed too), large
// results, the MCP gateway, durable tasks, floods and memory — and reports
// each row against its target, as text or JSON. Markdown renders a JSON
// report as the tables of docs/performance.md (benchdoc writes them).
//
// It takes what it needs of the toolmesh command through Env and imports
// nothing of it; the usage Problems it shares with the other commands are
// cmd/toolmesh/internal/usage's. The benchmarks `go test -bench` runs live
// beside the packages they measure and in tests, not here.
package bench
