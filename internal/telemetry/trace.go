package telemetry

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
)

// SpanAttributes are the attributes both ends put on a call's span (the
// caller's client span and the worker's server span), so the two sides
// of one call are searched for the same way.
func SpanAttributes(tool, callID string, stream bool) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("rpc.system", "toolmesh"),
		attribute.String("toolmesh.tool", tool),
		attribute.String("toolmesh.call_id", callID),
		attribute.Bool("toolmesh.stream", stream),
	}
}

// EndSpan ends a call's span with its outcome: the Problem's code and an
// error status, or "result" when p is nil.
func EndSpan(span trace.Span, p *envelope.Problem) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if p != nil {
		span.SetAttributes(attribute.String("toolmesh.outcome", string(p.Code)))
		span.SetStatus(codes.Error, p.Error())
	} else {
		span.SetAttributes(attribute.String("toolmesh.outcome", "result"))
	}
	span.End()
}

// Tracer starts call spans, and none at all while nobody could record
// them: with no TracerProvider configured and none installed globally
// (otel.SetTracerProvider), a call whose context carries no trace gets a
// no-op span at no cost — no allocation, no context value. Once a global
// provider is installed, later calls use it.
type Tracer struct {
	name  string
	fixed atomic.Pointer[trace.Tracer] // the tracer to use, once there is one
	idle  trace.TracerProvider         // the global default seen at construction
	noop  trace.Span
}

// NewTracer returns a Tracer named name (the instrumentation scope) using
// tp, or the global provider when tp is nil.
func NewTracer(tp trace.TracerProvider, name string) *Tracer {
	t := &Tracer{name: name, noop: trace.SpanFromContext(context.Background())}
	if tp == nil {
		tp = otel.GetTracerProvider()
		// otel's global default is an internal delegating type until an
		// application installs a provider; it records nothing meanwhile.
		if fmt.Sprintf("%T", tp) == "*global.tracerProvider" {
			t.idle = tp
			return t
		}
	}
	tr := tp.Tracer(name)
	t.fixed.Store(&tr)
	return t
}

// Off reports whether a span started on ctx now would be a no-op: no
// provider, and no trace in ctx to continue. Callers use it to skip
// building span names and attributes nobody would read.
func (t *Tracer) Off(ctx context.Context) bool {
	return t.fixed.Load() == nil && otel.GetTracerProvider() == t.idle && !trace.SpanContextFromContext(ctx).IsValid()
}

// Noop is the no-op span Start returns when tracing is off.
func (t *Tracer) Noop() trace.Span { return t.noop }

// Start starts a span as trace.Tracer.Start does, or returns ctx and a
// no-op span when tracing is off and ctx carries no trace to continue.
func (t *Tracer) Start(ctx context.Context, spanName string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tr := t.fixed.Load(); tr != nil {
		return (*tr).Start(ctx, spanName, opts...)
	}
	tp := otel.GetTracerProvider()
	if tp != t.idle {
		tr := tp.Tracer(t.name)
		t.fixed.Store(&tr)
		return tr.Start(ctx, spanName, opts...)
	}
	if trace.SpanContextFromContext(ctx).IsValid() {
		return tp.Tracer(t.name).Start(ctx, spanName, opts...) // carries the parent's context on
	}
	return ctx, t.noop
}
