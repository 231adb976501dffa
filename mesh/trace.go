package mesh

import (
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
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
