package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/meshtest"
)

// Dispatch answers a deferred export's tool search from the mesh's index:
// "read a file" loads fs.read_file first (Anthropic: a tool_reference;
// Responses: its definition in namespace fs), beside a function call of
// the same turn that runs on the mesh as usual.
// dispatchSearchHits is the most tools Dispatch loads for one tool search
// (the caller's own bound).
const dispatchSearchHits = 5

func TestDispatchAnswersToolSearch(t *testing.T) {
	srv := searchCatalogMesh(t)
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	ctx := context.Background()
	specs := catalogSpecs(ctx, t, c, 0)
	cases := []struct {
		p      provider.Provider
		output string
		first  string // how the answer names fs.read_file
	}{
		{provider.Anthropic, `{"content":[{"type":"tool_use","id":"s1","name":"tool_search","input":{"query":"read a file"}},` +
			`{"type":"tool_use","id":"c1","name":"echo","input":{"message":"hi"}}]}`, `"tool_name":"fs_read_file"`},
		{provider.OpenAIResponses, `{"output":[{"type":"tool_search_call","call_id":"s1","execution":"client","status":"completed","arguments":{"query":"read a file"}},` +
			`{"type":"function_call","call_id":"c1","name":"echo","arguments":"{\"message\":\"hi\"}"}]}`, `"name":"fs_read_file"`},
	}
	for _, tc := range cases {
		t.Run(string(tc.p), func(t *testing.T) {
			ts, err := provider.Export(specs, provider.ExportOptions{Provider: tc.p, Defer: true})
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.Dispatch(ctx, ts, json.RawMessage(tc.output))
			if err != nil || len(d.Items) != 2 {
				t.Fatalf("dispatch: %v %+v", err, d)
			}
			var found struct{ Tools []string }
			if err := json.Unmarshal(d.Outcomes[0].Data, &found); err != nil || len(found.Tools) == 0 || found.Tools[0] != "fs.read_file" || len(found.Tools) > dispatchSearchHits {
				t.Fatalf("the search found %s, want fs.read_file first (%v)", d.Outcomes[0].Data, err)
			}
			if search := string(d.Items[0]); !strings.Contains(search, tc.first) {
				t.Fatalf("the search answer does not load fs.read_file: %s", search)
			}
			if !strings.Contains(string(d.Items[1]), "hi") || d.Outcomes[1].Problem != nil {
				t.Fatalf("the turn's function call did not run: %s %+v", d.Items[1], d.Outcomes[1])
			}
		})
	}
}
