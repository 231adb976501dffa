package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/toolmesh/toolmesh/mesh"
)

// setupTracing wires the OpenTelemetry SDK when the standard
// OTEL_EXPORTER_OTLP_* variables ask for it, exporting over OTLP/HTTP or,
// when the protocol variable says grpc, OTLP/gRPC (the exporters read their
// endpoint, headers, TLS and timeout from the same variables); otherwise it does nothing and tracing stays a no-op. Only the
// command does this: the libraries use the otel API alone.
func setupTracing(ctx context.Context, service string, log *slog.Logger) (shutdown func()) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return func() {}
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		log.Warn("unsupported OTLP protocol; exporting with http/protobuf", "protocol", protocol)
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		log.Warn("tracing disabled: cannot create the OTLP exporter", "err", err)
		return func() {}
	}
	name := service
	if v := os.Getenv("OTEL_SERVICE_NAME"); v != "" {
		name = v
	}
	res, _ := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(mesh.DefaultPropagator())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}
}
