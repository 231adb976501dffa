package provider_test

import (
	"encoding/json"
	"flag"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/internal/providerresults"
	"github.com/toolmesh/toolmesh/internal/testutil"
)

// resultsGolden compares v, indented, with testdata/name, as the
// package's own golden does (its -update flag rewrites it).
func resultsGolden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, name, got, flag.Lookup("update").Value.String() == "true")
}

// outcomes are the results-out fixtures: an object, non-object results,
// deltas folded into an empty result, Problems with and without a retry.
func outcomes() []struct {
	name string
	call provider.ToolCall
	evs  []envelope.ToolEvent
} {
	fix := envelope.NewProblem(envelope.CodeInvalidInput, "args do not match the schema: /path: required property is missing")
	fix.Instance = "urn:uuid:fixed"
	busy := envelope.NewProblem(envelope.CodeOverloaded, "worker at capacity").WithRetryAfter(2.5)
	return []struct {
		name string
		call provider.ToolCall
		evs  []envelope.ToolEvent
	}{
		{"object", provider.ToolCall{ID: "c1", Name: "fs_read", Tool: "fs_read"}, []envelope.ToolEvent{envelope.ToolEvent{Type: envelope.EventResult, Data: json.RawMessage(`{"text":"127.0.0.1 localhost"}`)}}},
		{"number", provider.ToolCall{ID: "c2", Name: "echo", Tool: "echo"}, []envelope.ToolEvent{envelope.ToolEvent{Type: envelope.EventResult, Data: json.RawMessage(`42`)}}},
		{"string", provider.ToolCall{ID: "c3", Name: "echo", Tool: "echo"}, []envelope.ToolEvent{envelope.ToolEvent{Type: envelope.EventResult, Data: json.RawMessage(`"hello"`)}}},
		{"array", provider.ToolCall{ID: "c4", Name: "search_query", Tool: "search.query"}, []envelope.ToolEvent{envelope.ToolEvent{Type: envelope.EventResult, Data: json.RawMessage(`["a","b"]`)}}},
		{"deltas", provider.ToolCall{ID: "c5", Name: "count", Tool: "count"}, []envelope.ToolEvent{
			envelope.ToolEvent{Type: envelope.EventStart, ToolID: "count", CallID: "01J"}, envelope.ToolEvent{Type: envelope.EventDelta, Data: json.RawMessage(`{"n":1}`)},
			envelope.ProgressEvent(50, "half"), envelope.ToolEvent{Type: envelope.EventDelta, Data: json.RawMessage(`{"n":2}`)}, envelope.ToolEvent{Type: envelope.EventResult}}},
		{"problem", provider.ToolCall{ID: "c6", Name: "fs_read", Tool: "fs_read"}, []envelope.ToolEvent{envelope.ErrorEvent(fix)}},
		{"transient-after-deltas", provider.ToolCall{ID: "c7", Name: "count", Tool: "count"}, []envelope.ToolEvent{
			envelope.ToolEvent{Type: envelope.EventDelta, Data: json.RawMessage(`{"n":1}`)}, envelope.ErrorEvent(busy)}},
		{"bad-args", provider.ToolCall{ID: "c8", Name: "kv_put", Tool: "kv.put",
			Problem: provider.BadArgs("c8", "kv_put", "arguments are not valid JSON: unexpected EOF")}, nil},
		{"no-terminal", provider.ToolCall{ID: "c9", Name: "echo", Tool: "echo"}, []envelope.ToolEvent{envelope.ToolEvent{Type: envelope.EventDelta, Data: json.RawMessage(`1`)}}},
	}
}

func TestResultsGolden(t *testing.T) {
	for _, p := range provider.Providers() {
		t.Run(string(p), func(t *testing.T) {
			var items []json.RawMessage
			for _, o := range outcomes() {
				var acc providerresults.Accumulator
				for _, ev := range o.evs {
					acc.Add(ev)
				}
				out := acc.Outcome()
				if o.evs == nil {
					out = provider.Outcome{}
				}
				item, err := providerresults.Item(p, o.call, out)
				if err != nil {
					t.Fatal(err)
				}
				items = append(items, item)
			}
			msgs, err := providerresults.Messages(p, items)
			if err != nil {
				t.Fatal(err)
			}
			resultsGolden(t, "results_"+string(p)+".json", msgs)
		})
	}
}
