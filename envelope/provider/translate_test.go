package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// callView is a ToolCall without the Problem's random instance URN.
type callView struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Problem string          `json:"problem,omitempty"`
}

func viewCalls(calls []ToolCall) []callView {
	out := make([]callView, len(calls))
	for i, c := range calls {
		out[i] = callView{ID: c.ID, Name: c.Name, Tool: c.Tool, Args: c.Args}
		if c.Problem != nil {
			out[i].Problem = problemText(c.Problem)
		}
	}
	return out
}

// problemText renders a Problem in the calls goldens as a model reads it
// in a tool result (providerresults' rendering): code, detail, retry, fix.
func problemText(p *envelope.Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "error %s: %s", p.Code, p.Error())
	if p.RetryAfter != nil {
		b.WriteString("\nretry: after " + strconv.FormatFloat(*p.RetryAfter, 'f', -1, 64) + "s")
	} else {
		b.WriteString("\nretry: no (not transient)")
	}
	if f := p.SuggestedFix; f != nil && f.Description != "" {
		b.WriteString("\nfix: " + f.Description)
	}
	return b.String()
}

func TestParseCallsGolden(t *testing.T) {
	for _, p := range providers() {
		t.Run(string(p), func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "calls_"+string(p)+".json"))
			if err != nil {
				t.Fatal(err)
			}
			ts := exportFixture(t, ExportOptions{Provider: p})
			calls, err := ts.ParseCalls(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) == 0 {
				t.Fatal("no calls parsed")
			}
			golden(t, "calls_"+string(p)+".golden.json", viewCalls(calls))
		})
	}
}

// Output that is not the provider's shape at all is the orchestrator's
// bug: an invalid_input error, never a panic or an empty success.
func TestParseCallsRejectsForeignShapes(t *testing.T) {
	cases := []struct {
		p   Provider
		out string
	}{
		{OpenAI, `{"tool_calls": {"not": "an array"}}`},
		{OpenAI, `not json`},
		{OpenAIResponses, `{"output": 3}`},
		{Anthropic, `{"content": [1, 2]}`},
		{Gemini, `{"parts": "x"}`},
		{MCP, `{"method": "tools/list", "params": {}}`},
		{MCP, `{"params": {}}`},
	}
	for _, tc := range cases {
		ts := &Toolset{Provider: tc.p}
		_, err := ts.ParseCalls(json.RawMessage(tc.out))
		p, ok := err.(*envelope.Problem)
		if !ok || p.Code != envelope.CodeInvalidInput {
			t.Errorf("%s %s: got %v, want an invalid_input Problem", tc.p, tc.out, err)
		}
	}
}

// formatCases are the response formats the goldens lower.
func formatCases() []struct {
	name string
	rf   envelope.ResponseFormat
} {
	schema := func(name, s string, strict bool) envelope.ResponseFormat {
		return envelope.ResponseFormat{Type: envelope.FormatJSONSchema, JSONSchema: &envelope.JSONSchemaFormat{Name: name, Schema: json.RawMessage(s), Strict: strict}}
	}
	return []struct {
		name string
		rf   envelope.ResponseFormat
	}{
		{"free", envelope.ResponseFormat{Type: envelope.FormatFree}},
		{"json_object", envelope.ResponseFormat{Type: envelope.FormatJSONObject}},
		{"strict", schema("weather", `{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city"]}`, true)},
		{"not_strictable", schema("tags", `{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}},"required":["tags"]}`, true)},
		{"recursive", schema("tree", `{"type":"object","properties":{"root":{"$ref":"#/$defs/n"}},"required":["root"],"additionalProperties":false,"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["kids"],"additionalProperties":false}}}`, false)},
		{"array_root", schema("names", `{"type":"array","items":{"type":"string"}}`, false)},
	}
}

// formatTargets covers every strategy of the capability table.
var formatTargets = []struct {
	file string
	opts ExportOptions
}{
	{"openai", ExportOptions{Provider: OpenAI, Model: "gpt-4o"}},
	{"openai-gpt-3.5", ExportOptions{Provider: OpenAI, Model: "gpt-3.5-turbo"}},
	{"openai-responses", ExportOptions{Provider: OpenAIResponses}},
	{"anthropic", ExportOptions{Provider: Anthropic, Model: "claude-sonnet-4-5"}},
	{"anthropic-claude-3", ExportOptions{Provider: Anthropic, Model: "claude-3-5-haiku-latest"}},
	{"gemini", ExportOptions{Provider: Gemini, Model: "gemini-2.5-flash"}},
	{"gemini-2.0", ExportOptions{Provider: Gemini, Model: "gemini-2.0-flash"}},
	{"gemini-legacy", ExportOptions{Provider: Gemini, Model: "gemini-1.5-pro"}},
}

func TestResponseFormatGolden(t *testing.T) {
	for _, tc := range formatTargets {
		t.Run(tc.file, func(t *testing.T) {
			got := map[string]Lowered{}
			for _, fc := range formatCases() {
				l, err := LowerResponseFormat(fc.rf, tc.opts)
				if err != nil {
					t.Fatalf("%s: %v", fc.name, err)
				}
				got[fc.name] = l
			}
			golden(t, "format_"+tc.file+".json", got)
		})
	}
}

// The capability table is overridable: a rule put first wins over the
// shipped one, and explicit capabilities win over both.
func TestCapabilityOverride(t *testing.T) {
	rf := formatCases()[2].rf
	table := append(capabilityTable{{OpenAI, "", Capabilities{formatJSONObjectPrompt, schemaStrict}}}, defaultCapabilities()...)
	l, err := LowerResponseFormat(rf, ExportOptions{Provider: OpenAI, Model: "gpt-4o", table: table})
	if err != nil || l.Strategy != formatJSONObjectPrompt || l.System == "" {
		t.Fatalf("table override: %+v %v", l, err)
	}
	caps := Capabilities{formatNative, schemaJSON}
	l, err = LowerResponseFormat(rf, ExportOptions{Provider: OpenAI, Model: "gpt-3.5-turbo", caps: &caps})
	if err != nil || l.Strategy != formatNative || l.Request["response_format"] == nil {
		t.Fatalf("explicit override: %+v %v", l, err)
	}
	if _, err := LowerResponseFormat(rf, ExportOptions{Provider: MCP}); err == nil {
		t.Fatal("MCP has no model request; want an error")
	}
}

// FuzzParseCalls: whatever a model (or a hostile proxy) sends, parsing
// never panics, and every call either has object arguments and a mesh
// tool, or a Problem for the model to read.
func FuzzParseCalls(f *testing.F) {
	for _, p := range providers() {
		b, err := os.ReadFile(filepath.Join("testdata", "calls_"+string(p)+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(p), string(b))
	}
	sets := map[Provider]*Toolset{}
	for _, p := range providers() {
		sets[p] = exportFixture(f, ExportOptions{Provider: p})
	}
	f.Fuzz(func(t *testing.T, provider, output string) {
		ts, ok := sets[Provider(provider)]
		if !ok {
			return
		}
		calls, err := ts.ParseCalls(json.RawMessage(output))
		if err != nil {
			return
		}
		for _, c := range calls {
			if c.Problem != nil {
				continue
			}
			if c.Tool == "" || len(c.Args) == 0 || c.Args[0] != '{' || !json.Valid(c.Args) {
				t.Fatalf("call %+v has neither a Problem nor object args for a mesh tool", c)
			}
		}
	})
}
