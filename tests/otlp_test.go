package tests

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the command exports its spans over
// OTLP/HTTP: the caller's client span and the dev worker's server span
// arrive at the collector as parent and child of one trace.
func TestCommandExportsTracesOverOTLP(t *testing.T) {
	var mu sync.Mutex
	spans := map[string]*tracepb.Span{}
	services := map[string]bool{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					services[a.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name] = s
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)

	dev, url := startDev(t)
	if r := runCmd(t, "", "call", "echo", "--server", url, "--args", `{"message":"traced"}`); r.code != 0 {
		t.Fatalf("call: %+v", r)
	}
	if code := dev.stop(t, os.Interrupt); code != 0 { // shutdown flushes the dev process's spans
		t.Fatalf("dev exited %d", code)
	}

	mu.Lock()
	defer mu.Unlock()
	client, server := spans["toolmesh.call echo"], spans["toolmesh.serve echo"]
	if client == nil || server == nil {
		t.Fatalf("collector got spans %v, want the call's client and server spans", keys(spans))
	}
	if !bytes.Equal(client.TraceId, server.TraceId) || !bytes.Equal(server.ParentSpanId, client.SpanId) {
		t.Errorf("server span is not the client span's child: client %x/%x, server %x parent %x",
			client.TraceId, client.SpanId, server.TraceId, server.ParentSpanId)
	}
	if client.Kind != tracepb.Span_SPAN_KIND_CLIENT || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span kinds %s and %s", client.Kind, server.Kind)
	}
	if !services["toolmesh-call"] || !services["toolmesh-dev"] {
		t.Errorf("service names %v, want toolmesh-call and toolmesh-dev", services)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
