package telemetry

import "go.opentelemetry.io/otel/propagation"

// DefaultPropagator is W3C trace context plus baggage. The worker and the
// caller use it unless configured otherwise, rather than the global
// propagator, which is a no-op until an application sets it.
func DefaultPropagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}
