package middleware

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolmesh/toolmesh/worker"
)

// Instrument names Metrics records, after OpenTelemetry's naming rules.
const (
	MetricCalls    = "toolmesh.worker.calls"
	MetricErrors   = "toolmesh.worker.errors"
	MetricDuration = "toolmesh.worker.duration"
	MetricInFlight = "toolmesh.worker.in_flight"
)

// Metrics records every call through the OpenTelemetry metrics API on
// mp's meter: calls and failed calls by tool (failures also by code), the
// handler's duration as a histogram in seconds, and the calls in flight.
// The library only uses the API; the program installs an SDK and an
// exporter (the toolmesh command does so from OTEL_EXPORTER_OTLP_*).
func Metrics(mp metric.MeterProvider) worker.Middleware {
	m := mp.Meter("github.com/toolmesh/toolmesh/worker/middleware")
	// The API's instruments fall back to no-ops on error, so a broken
	// provider costs the metrics, never the calls.
	calls, _ := m.Int64Counter(MetricCalls, metric.WithUnit("{call}"), metric.WithDescription("Tool calls that reached the handler."))
	errs, _ := m.Int64Counter(MetricErrors, metric.WithUnit("{call}"), metric.WithDescription("Tool calls that ended in an error, by code."))
	dur, _ := m.Float64Histogram(MetricDuration, metric.WithUnit("s"), metric.WithDescription("How long handlers ran."))
	inflight, _ := m.Int64UpDownCounter(MetricInFlight, metric.WithUnit("{call}"), metric.WithDescription("Tool calls running now."))
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			tool := metric.WithAttributes(attribute.String("toolmesh.tool", req.Tool))
			start := time.Now()
			inflight.Add(ctx, 1, tool)
			res, err := next.Handle(ctx, req, emit)
			inflight.Add(ctx, -1, tool)
			code := outcome(err)
			calls.Add(ctx, 1, tool)
			if code != "" {
				errs.Add(ctx, 1, metric.WithAttributes(attribute.String("toolmesh.tool", req.Tool), attribute.String("toolmesh.code", string(code))))
			}
			dur.Record(ctx, time.Since(start).Seconds(), tool)
			return res, err
		})
	}
}
