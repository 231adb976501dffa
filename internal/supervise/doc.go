// Package supervise starts the programs a worker runs (CLI-bound tools,
// bridged MCP servers) so that none of them outlives the worker, kill -9
// included: each runs in its own process group, and on Linux something
// outside the worker takes the groups down when it dies. Supervisor does
// it for many short-lived programs with one sentinel process per
// Supervisor and a table of live groups in memory (a plain fork and exec
// per program); Command and Start put one long-lived program under a
// small shell supervisor of its own.
package supervise
