// Package fleet is what `toolmesh top` shows of a mesh: the load each
// worker adds to its ADR-32 $SRV.STATS answer (ToolLoad, with its latency
// Histogram), one round of those answers (Sample, gathered by a Gatherer)
// and the summary of two rounds (Summarize).
//
// It is internal because only the worker (which publishes the load), the
// catalogue (which gathers a sample as its identity may see it) and the
// toolmesh command read these shapes; on the wire they are JSON, and the
// protocol (docs/protocol.md) is the contract.
package fleet
