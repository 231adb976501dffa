// Package liveness holds what a caller knows of the workers behind its
// calls (docs/protocol.md §8.2): the workers' presence beacons it follows
// (Presence), its probes of silent workers and the workers heard on each
// tool (Probes), and its settle markers in flight (Markers).
//
// It is bookkeeping only — tables under locks, no connection, no calls —
// so that package caller keeps the judging and the sending (when a call
// is worker_lost, when to probe, what a 503 settles), and these tables
// read and test on their own.
package liveness
