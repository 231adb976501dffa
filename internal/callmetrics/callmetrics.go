package callmetrics

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolmesh/toolmesh/envelope"
)

// Instruments are one side's call instruments.
type Instruments struct {
	calls, errs metric.Int64Counter
	inflight    metric.Int64UpDownCounter
	dur         metric.Float64Histogram
}

// New makes the instruments <prefix>.calls, .errors, .duration and
// .in_flight on m. The API's instruments fall back to no-ops on error, so
// a broken provider costs the metrics, never the calls.
func New(m metric.Meter, prefix, what string) Instruments {
	var i Instruments
	i.calls, _ = m.Int64Counter(prefix+".calls", metric.WithUnit("{call}"), metric.WithDescription("Tool calls "+what+"."))
	i.errs, _ = m.Int64Counter(prefix+".errors", metric.WithUnit("{call}"), metric.WithDescription("Tool calls that ended in an error, by code."))
	i.dur, _ = m.Float64Histogram(prefix+".duration", metric.WithUnit("s"), metric.WithDescription("How long tool calls took."))
	i.inflight, _ = m.Int64UpDownCounter(prefix+".in_flight", metric.WithUnit("{call}"), metric.WithDescription("Tool calls in flight."))
	return i
}

// Begin counts a call of tool in flight; the returned function ends it
// with its outcome code ("" for a result).
func (i Instruments) Begin(ctx context.Context, tool string) func(code envelope.Code) {
	attr := metric.WithAttributes(attribute.String("toolmesh.tool", tool))
	start := time.Now()
	i.inflight.Add(ctx, 1, attr)
	return func(code envelope.Code) {
		i.inflight.Add(ctx, -1, attr)
		i.calls.Add(ctx, 1, attr)
		if code != "" {
			i.errs.Add(ctx, 1, metric.WithAttributes(attribute.String("toolmesh.tool", tool), attribute.String("toolmesh.code", string(code))))
		}
		i.dur.Record(ctx, time.Since(start).Seconds(), attr)
	}
}

// Log writes one access-log line: Info for a result, Warn for an error.
func Log(ctx context.Context, log *slog.Logger, tool, callID string, took time.Duration, code envelope.Code) {
	level := slog.LevelInfo
	if code != "" {
		level = slog.LevelWarn
	}
	log.LogAttrs(ctx, level, "tool call", slog.String("tool", tool), slog.String("call_id", callID),
		slog.Duration("duration", took), slog.String("outcome", string(code)))
}
