package tests

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// collector records the spans, metric names and service names of OTLP exports.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    map[string]*tracepb.Span
	services map[string]bool
	metrics  map[string]bool // "<service> <metric name>"
}

func newCollector() *collector {
	return &collector{spans: map[string]*tracepb.Span{}, services: map[string]bool{}, metrics: map[string]bool{}}
}

// metricsCollector is the collector's OTLP metrics service.
type metricsCollector struct {
	colmetricpb.UnimplementedMetricsServiceServer
	c *collector
}

func (m metricsCollector) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		service := ""
		for _, a := range rm.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				m.c.metrics[service+" "+mt.Name] = true
			}
		}
	}
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				c.services[a.GetValue().GetStringValue()] = true
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[s.Name] = s
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// serveHTTP runs the collector as an OTLP/HTTP endpoint and returns its URL.
func (c *collector) serveHTTP(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/metrics" {
			var req colmetricpb.ExportMetricsServiceRequest
			if proto.Unmarshal(body, &req) != nil {
				http.Error(w, "bad export", http.StatusBadRequest)
				return
			}
			_, _ = metricsCollector{c: c}.Export(r.Context(), &req)
			w.Header().Set("Content-Type", "application/x-protobuf")
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		_, _ = c.Export(r.Context(), &req)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveGRPC runs the collector as an OTLP/gRPC endpoint and returns its URL.
func (c *collector) serveGRPC(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	colmetricpb.RegisterMetricsServiceServer(srv, metricsCollector{c: c})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return "http://" + lis.Addr().String() // http: plaintext, as the exporters read it
}

// With the standard OTEL_EXPORTER_OTLP_* variables set, the command exports
// its spans over OTLP, HTTP or gRPC as the protocol variable says: the
// caller's client span and the dev worker's server span arrive as parent
// and child of one trace. The worker's metrics go the same way.
func TestCommandExportsTracesOverOTLP(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			c := newCollector()
			endpoint := c.serveHTTP
			if protocol == "grpc" {
				endpoint = c.serveGRPC
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint(t))
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)

			dev, url := startDev(t)
			if r := runCmd(t, "", "call", "echo", "--server", url, "--args", `{"message":"traced"}`); r.code != 0 {
				t.Fatalf("call: %+v", r)
			}
			if code := dev.stop(t, os.Interrupt); code != 0 { // shutdown flushes the dev process's spans
				t.Fatalf("dev exited %d", code)
			}

			c.mu.Lock()
			defer c.mu.Unlock()
			client, server := c.spans["toolmesh.call echo"], c.spans["toolmesh.serve echo"]
			if client == nil || server == nil {
				t.Fatalf("collector got spans %v, want the call's client and server spans", keys(c.spans))
			}
			if !bytes.Equal(client.TraceId, server.TraceId) || !bytes.Equal(server.ParentSpanId, client.SpanId) {
				t.Errorf("server span is not the client span's child: client %x/%x, server %x parent %x",
					client.TraceId, client.SpanId, server.TraceId, server.ParentSpanId)
			}
			if client.Kind != tracepb.Span_SPAN_KIND_CLIENT || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("span kinds %s and %s", client.Kind, server.Kind)
			}
			if !c.services["toolmesh-call"] || !c.services["toolmesh-dev"] {
				t.Errorf("service names %v, want toolmesh-call and toolmesh-dev", c.services)
			}
			// The dev worker's metrics middleware exported through the
			// same variables (flushed on shutdown).
			for _, name := range []string{"toolmesh.worker.calls", "toolmesh.worker.duration", "toolmesh.worker.in_flight"} {
				if !c.metrics["toolmesh-dev "+name] {
					t.Errorf("collector got metrics %v, want toolmesh-dev %s", keys(c.metrics), name)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
