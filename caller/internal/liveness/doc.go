// Package liveness holds what a caller knows of the workers behind its
// calls, and how it judges its calls by it (docs/protocol.md §8.2): the
// workers' presence beacons it follows (Presence), its probes of silent
// workers and the workers heard on each tool (Probes), its settle markers
// in flight (Markers), and the Judge that decides, from these tables, when
// a call in flight is worker_lost or overloaded, when its worker is to be
// probed, and when a settle marker's answer settles a call no worker named.
//
// It holds no connection and no calls: package caller keeps the calls in
// flight, takes heartbeats and 503s off the wire into these tables, and
// does what the Judge decides — sends probes, settle markers and cancels,
// ends calls — so that the judging reads and tests on its own. It imports
// the public envelope package because a verdict is envelope's Problem
// (worker_lost, overloaded), built under the caller's base URI.
package liveness
