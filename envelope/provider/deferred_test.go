package provider

import (
	"encoding/json"
	"strings"
	"testing"
)

// deferredTargets are the deferred exports the goldens pin (and
// tests/providersdk decodes with the official SDKs).
var deferredTargets = []struct {
	file string
	opts ExportOptions
}{
	{"openai-responses-deferred", ExportOptions{Provider: OpenAIResponses, Defer: true}},
	{"anthropic-deferred", ExportOptions{Provider: Anthropic, Defer: true}},
}

func TestExportDeferredGolden(t *testing.T) {
	for _, tc := range deferredTargets {
		t.Run(tc.file, func(t *testing.T) {
			ts := exportFixture(t, tc.opts)
			golden(t, "export_"+tc.file+".json", ts)
			if ts.SearchTool != searchToolName {
				t.Fatalf("search tool = %q, want %q", ts.SearchTool, searchToolName)
			}
			all := strings.Join(rawStrings(ts.Tools), "\n")
			if n := strings.Count(all, `"defer_loading":true`); n != ts.Names.size() {
				t.Fatalf("%d tools deferred, want every one of %d", n, ts.Names.size())
			}
		})
	}
}

func rawStrings(raws []json.RawMessage) []string {
	out := make([]string, len(raws))
	for i, r := range raws {
		out[i] = string(r)
	}
	return out
}

// Responses groups dotted names into namespaces: fs.read sits in "fs",
// echo (no dot) stays a top-level function.
func TestDeferredResponsesNamespaces(t *testing.T) {
	ts := exportFixture(t, ExportOptions{Provider: OpenAIResponses, Defer: true})
	kinds := map[string]string{}
	for _, raw := range ts.Tools {
		var h struct{ Type, Name string }
		_ = json.Unmarshal(raw, &h)
		kinds[h.Name] = h.Type
	}
	for name, want := range map[string]string{"fs": "namespace", "kv": "namespace", "echo": "function", "": "tool_search"} {
		if kinds[name] != want {
			t.Errorf("%q is %q, want %q (tools %v)", name, kinds[name], want, kinds)
		}
	}
}

// A model's tool-search call parses as a search, and its answer is the
// provider's shape: pinned by goldens the SDK tests decode.
func TestSearchCallsAndResults(t *testing.T) {
	cases := []struct {
		file, output string
	}{
		{"openai-responses", `{"output":[{"type":"tool_search_call","call_id":"ts_1","execution":"client","status":"completed","arguments":{"query":"read a file"}}]}`},
		{"anthropic", `{"content":[{"type":"tool_use","id":"toolu_1","name":"tool_search","input":{"query":"read a file"}}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			ts := exportFixture(t, ExportOptions{Provider: deferredTargets[0].opts.Provider, Defer: true})
			if tc.file == "anthropic" {
				ts = exportFixture(t, ExportOptions{Provider: Anthropic, Defer: true})
			}
			calls, err := ts.ParseCalls(json.RawMessage(tc.output))
			if err != nil || len(calls) != 1 || calls[0].Search != "read a file" || calls[0].Problem != nil {
				t.Fatalf("calls = %+v, %v", calls, err)
			}
			item, err := ts.SearchResultItem(calls[0], []string{"fs.read", "echo", "not.offered"})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "search_"+tc.file+".json", json.RawMessage(item))
		})
	}
}

// A search call without a query is a Problem the model can read.
func TestSearchCallWithoutQuery(t *testing.T) {
	ts := exportFixture(t, ExportOptions{Provider: Anthropic, Defer: true})
	calls, err := ts.ParseCalls(json.RawMessage(`{"content":[{"type":"tool_use","id":"t","name":"tool_search","input":{}}]}`))
	if err != nil || len(calls) != 1 || calls[0].Problem == nil {
		t.Fatalf("calls = %+v, %v", calls, err)
	}
}
