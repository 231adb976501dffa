package workermw

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/toolmesh/toolmesh/internal/callmetrics"
	"github.com/toolmesh/toolmesh/worker"
)

// Metrics records every call through the OpenTelemetry metrics API on
// mp's meter: calls and failed calls by tool (failures also by code), the
// handler's duration as a histogram in seconds, and the calls in flight:
// the instruments toolmesh.worker.calls, toolmesh.worker.errors,
// toolmesh.worker.duration and toolmesh.worker.in_flight
// (docs/operations.md).
// The library only uses the API; the program installs an SDK and an
// exporter (the toolmesh command does so from OTEL_EXPORTER_OTLP_*).
func Metrics(mp metric.MeterProvider) worker.Middleware {
	inst := callmetrics.New(mp.Meter("github.com/toolmesh/toolmesh/worker/workermw"), "toolmesh.worker", "that reached the handler")
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			end := inst.Begin(ctx, req.Tool)
			res, err := next.Handle(ctx, req, emit)
			end(outcome(err))
			return res, err
		})
	}
}
