package callermw

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/callmetrics"
)

// outcome is the code a terminal event ends the call with ("" for a result).
func outcome(ev envelope.ToolEvent) envelope.Code {
	if p := ev.Problem(); p != nil {
		return p.Code
	}
	return ""
}

// AccessLog logs one line per call at Info (Warn when it failed): tool,
// call id, duration and outcome. Arguments, results and options (a bearer
// token among them) are never logged.
func AccessLog(log *slog.Logger) caller.Middleware {
	return func(next caller.Invoker) caller.Invoker {
		return func(ctx context.Context, inv *caller.Invocation) (string, envelope.ToolEvent) {
			start := time.Now()
			id, ev := next(ctx, inv)
			callmetrics.Log(ctx, log, inv.Tool, id, time.Since(start), outcome(ev))
			return id, ev
		}
	}
}

// Metrics records every call through the OpenTelemetry metrics API on
// mp's meter: calls and failed calls by tool (failures also by code, the
// caller's own such as worker_lost included), the time to the terminal
// event as a histogram in seconds, and the calls in flight: the
// instruments toolmesh.caller.calls, toolmesh.caller.errors,
// toolmesh.caller.duration and toolmesh.caller.in_flight
// (docs/operations.md).
func Metrics(mp metric.MeterProvider) caller.Middleware {
	inst := callmetrics.New(mp.Meter("github.com/toolmesh/toolmesh/caller/callermw"), "toolmesh.caller", "made")
	return func(next caller.Invoker) caller.Invoker {
		return func(ctx context.Context, inv *caller.Invocation) (string, envelope.ToolEvent) {
			end := inst.Begin(ctx, inv.Tool)
			id, ev := next(ctx, inv)
			end(outcome(ev))
			return id, ev
		}
	}
}
