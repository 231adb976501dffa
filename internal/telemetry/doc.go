// Package telemetry starts and ends the spans of calls on both sides, at
// no cost while nobody records them.
//
// It imports the public envelope package because a span ends with the
// call's Problem, the public error type, as its status. Metrics and
// access logs are internal/callmetrics', and the SDK that exports spans
// is the toolmesh command's (cmd/toolmesh/internal/otlp).
package telemetry
