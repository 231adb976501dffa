package mesh

import (
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
)

// HeaderCarrier adapts NATS headers to OpenTelemetry's TextMapCarrier. Get
// matches names case-insensitively, so a traceparent set as "Traceparent"
// by another client is still found.
type HeaderCarrier nats.Header

var _ propagation.TextMapCarrier = HeaderCarrier(nil)

// Get returns the first value of key.
func (c HeaderCarrier) Get(key string) string { return Header(nats.Header(c), key) }

// Set replaces key's values.
func (c HeaderCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

// Keys lists the header names, lower-cased as propagators expect.
func (c HeaderCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, strings.ToLower(k))
	}
	return out
}

// DefaultPropagator is W3C trace context plus baggage. Libraries use it
// unless configured otherwise, rather than the global propagator, which is
// a no-op until an application sets it.
func DefaultPropagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

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
