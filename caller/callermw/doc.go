// Package callermw holds caller.Middleware for the caller's side of a
// call: an slog access log and OpenTelemetry metrics. They see each
// logical Call or CallAs once, retries included:
//
//	c, _ := caller.New(nc, caller.Config{Middleware: []caller.Middleware{
//		callermw.Metrics(otel.GetMeterProvider()),
//		callermw.AccessLog(slog.Default()),
//	}})
//
// The worker's side is package worker/workermw; both record with the same
// instruments and log line (internal/callmetrics), named by side. Spans
// are not middleware: the caller makes them itself
// (caller.Config.TracerProvider).
package callermw
