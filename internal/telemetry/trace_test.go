package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// With no provider installed and no trace in the context, starting a
// call's span allocates nothing and leaves the context as it was.
func TestTracerOffCostsNothing(t *testing.T) {
	tr := NewTracer(nil, "test")
	ctx := context.Background()
	if !tr.Off(ctx) {
		t.Fatal("tracing reported on with no provider installed")
	}
	allocs := testing.AllocsPerRun(100, func() {
		got, span := tr.Start(ctx, "toolmesh.call x")
		if got != ctx || span.IsRecording() {
			t.Fatal("a span was made for nobody")
		}
		span.End()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per untraced span, want 0", allocs)
	}
}

// A trace the context already carries is continued even with tracing
// off here: the span handed on keeps the parent's trace id.
func TestTracerOffContinuesATrace(t *testing.T) {
	tr := NewTracer(nil, "test")
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	if tr.Off(ctx) {
		t.Fatal("a context carrying a trace reported off")
	}
	_, span := tr.Start(ctx, "toolmesh.call x")
	if span.SpanContext().TraceID() != parent.TraceID() {
		t.Fatalf("trace id %s, want the parent's %s", span.SpanContext().TraceID(), parent.TraceID())
	}
}
