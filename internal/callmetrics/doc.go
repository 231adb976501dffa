// Package callmetrics records tool calls, for the metrics and access-log
// middleware of both worker and caller: one set of instruments and one
// log line shape, named by side.
//
// It imports the public envelope package because a call's outcome is
// recorded by its Problem code (envelope.Code), the one registry's names.
// The middleware itself is worker/workermw's and caller/callermw's, and
// spans are internal/telemetry's.
package callmetrics
