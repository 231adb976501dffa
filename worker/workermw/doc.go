// Package workermw holds the worker.Middleware most workers want: a
// bearer check, per-tool rate and concurrency limits, an slog access log,
// OpenTelemetry metrics and the audit records of calls. Put the
// worker-wide ones in worker.Config.Middleware and a tool's own in
// Register's (or AddTool's) last arguments:
//
//	w, _ := worker.New(nc, worker.Config{Middleware: []worker.Middleware{
//		workermw.Metrics(otel.GetMeterProvider()),
//		workermw.AccessLog(slog.Default()),
//		workermw.BearerTokens(os.Getenv("TOKEN")),
//	}})
//
// Middleware runs after the worker has admitted the call and validated its
// arguments, on the call's own goroutine, inside the handler's context.
// The caller's side is package caller/callermw; the stream that keeps
// the audit records is internal/audit's (`toolmesh audit`).
package workermw
