// Package supervise starts the programs a worker runs (CLI-bound tools,
// bridged MCP servers) so that none of them outlives the worker: each runs
// in its own process group under a small supervisor that, on Linux, the
// kernel signals when the worker dies (kill -9 included), and which then
// takes the whole group down after the kill grace.
package supervise
