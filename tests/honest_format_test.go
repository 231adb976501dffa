package tests

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// A response_format schema no result can satisfy is refused
// invalid_input before the tool runs — not after its side effects — and a
// satisfiable recursive schema is still taken.
func TestResponseFormatCheckedBeforeTheToolRuns(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	var runs atomic.Int32
	register(t, f.w, envelope.ToolSpec{Name: "sideeffect"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		runs.Add(1)
		return map[string]any{"name": "root", "children": []any{}}, nil
	})
	cases := []struct {
		name, schema string
		wantRun      bool
	}{
		{"self reference", `{"$ref":"#"}`, false},
		{"reference loop", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, false},
		{"loop under allOf", `{"allOf":[{"$ref":"#"}]}`, false},
		{"false", `false`, false},
		{"too large", `{"description":"` + strings.Repeat("x", 64<<10) + `"}`, false}, // over the 64 KiB a worker compiles
		{"not a schema", `{"type":"no-such-type"}`, false},
		{"not anything", `{"not":{}}`, false},
		{"empty enum", `{"enum":[]}`, false},
		{"contradictory allOf", `{"allOf":[{"type":"string"},{"type":"number"}]}`, false},
		{"minimum above maximum, required", `{"type":"object","required":["n"],"properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`, false},
		{"minimum above maximum, optional", `{"type":"object","properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`, true},
		{"recursive tree", `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := runs.Load()
			rf := envelope.ResponseFormat{Type: envelope.FormatJSONSchema, JSONSchema: &envelope.JSONSchemaFormat{Name: "f", Schema: json.RawMessage(tc.schema)}}
			_, err := f.c.Call(context.Background(), "sideeffect", nil, caller.WithResponseFormat(rf), caller.WithRetries(caller.NoRetries))
			ran := runs.Load() != before
			if ran != tc.wantRun {
				t.Fatalf("the tool ran: %v, want %v (err %v)", ran, tc.wantRun, err)
			}
			if tc.wantRun {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			p := wantCode(t, err, envelope.CodeInvalidInput)
			if !strings.Contains(p.Detail, "response_format") {
				t.Errorf("detail %q does not name response_format", p.Detail)
			}
		})
	}
}
