package otlp

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/toolmesh/toolmesh/internal/telemetry"
)

// Setup wires the OpenTelemetry SDK for traces and metrics when
// the standard OTEL_EXPORTER_OTLP_* variables ask for each, exporting over
// OTLP/HTTP or, when the protocol variable says grpc, OTLP/gRPC (the
// exporters read their endpoint, headers, TLS and timeout from the same
// variables); otherwise it does nothing and both stay no-ops. Only the
// command does this: the libraries use the otel API alone.
func Setup(ctx context.Context, service string, log *slog.Logger) (shutdown func()) {
	res := serviceResource(service)
	stopTraces := setupTracing(ctx, res, log)
	stopMetrics := setupMetrics(ctx, res, log)
	return func() { stopTraces(); stopMetrics() }
}

// otlpProtocol is the OTLP protocol for signal ("TRACES", "METRICS"), or
// "" when no endpoint is configured for it.
func otlpProtocol(signal string, log *slog.Logger) string {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") == "" {
		return ""
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "grpc":
		return "grpc"
	case "", "http/protobuf":
	default:
		log.Warn("unsupported OTLP protocol; exporting with http/protobuf", "protocol", protocol)
	}
	return "http/protobuf"
}

// serviceResource names this process for exports (OTEL_SERVICE_NAME wins).
func serviceResource(service string) *resource.Resource {
	if v := os.Getenv("OTEL_SERVICE_NAME"); v != "" {
		service = v
	}
	res, _ := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	return res
}

// flush runs an SDK provider's Shutdown with a bound, logging a failure.
func flush(what string, shutdown func(context.Context) error, log *slog.Logger) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("flushing "+what, "err", err)
		}
	}
}

// export makes signal's OTLP exporter with grpc or http as the variables
// say and hands it to install, whose shutdown it returns; when none is
// configured or it cannot be made, nothing is installed and the shutdown
// does nothing.
func export[E any](ctx context.Context, signal string, log *slog.Logger, grpc, http func(context.Context) (E, error), install func(E) func()) (shutdown func()) {
	var exp E
	var err error
	switch otlpProtocol(signal, log) {
	case "":
		return func() {}
	case "grpc":
		exp, err = grpc(ctx)
	default:
		exp, err = http(ctx)
	}
	if err != nil {
		log.Warn(strings.ToLower(signal)+" disabled: cannot create the OTLP exporter", "err", err)
		return func() {}
	}
	return install(exp)
}

func setupTracing(ctx context.Context, res *resource.Resource, log *slog.Logger) (shutdown func()) {
	return export(ctx, "TRACES", log,
		func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracegrpc.New(ctx) },
		func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracehttp.New(ctx) },
		func(exp sdktrace.SpanExporter) func() {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
			otel.SetTracerProvider(tp)
			otel.SetTextMapPropagator(telemetry.DefaultPropagator())
			return flush("traces", tp.Shutdown, log)
		})
}

// setupMetrics installs a meter provider that exports periodically (and
// once more on shutdown); the worker's middleware.Metrics records into it.
func setupMetrics(ctx context.Context, res *resource.Resource, log *slog.Logger) (shutdown func()) {
	return export(ctx, "METRICS", log,
		func(ctx context.Context) (sdkmetric.Exporter, error) { return otlpmetricgrpc.New(ctx) },
		func(ctx context.Context) (sdkmetric.Exporter, error) { return otlpmetrichttp.New(ctx) },
		func(exp sdkmetric.Exporter) func() {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
			otel.SetMeterProvider(mp)
			return flush("metrics", mp.Shutdown, log)
		})
}
