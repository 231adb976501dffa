// Package otlp wires the OpenTelemetry SDK into the toolmesh command:
// traces and metrics exported over OTLP when the standard
// OTEL_EXPORTER_OTLP_* variables ask for them. Only the command does this;
// the libraries use the otel API alone, so a program embedding them
// chooses its own SDK.
//
// The spans and instruments themselves are not here: the worker and the
// caller make them (internal/telemetry, internal/callmetrics).
package otlp
