package mcpmap

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/redact"
)

// sameJSON fails unless a and b encode to the same JSON value (member
// order aside).
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	var g, w any
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if json.Unmarshal(gb, &g) != nil || json.Unmarshal(wb, &w) != nil || !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// overTheWire is v as a peer decodes it into T.
func overTheWire[T any](t *testing.T, v any) T {
	t.Helper()
	var out T
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestToolRoundTrip: an MCP server's tool, hosted on the mesh (Spec) and
// served again (Tool), is the tool the server listed; a bridged tool's
// spec, served and hosted again, is the same spec.
func TestToolRoundTrip(t *testing.T) {
	yes, no := true, false
	tools := []*mcp.Tool{
		{Name: "read_file", Title: "Read a file", Description: "Reads a file under the allowed roots.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1},"head":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}},"required":["content"]}`),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no}},
		{Name: "delete_entity", Description: "Deletes an entity.",
			InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"n":{"type":"string"}},"properties":{"name":{"$ref":"#/$defs/n"}}}`),
			Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes}},
		{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
	}
	for _, tool := range tools {
		spec, changes, err := Spec("fs", tool)
		if err != nil || len(changes) > 0 {
			t.Fatalf("Spec(%s) = %v, changes %v", tool.Name, err, changes)
		}
		served, err := Tool(tool.Name, spec)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "MCP → mesh → MCP "+tool.Name, served, tool)
		again, _, err := Spec("fs", overTheWire[*mcp.Tool](t, served))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "mesh → MCP → mesh "+spec.Name, again, spec)
	}
}

// results are MCP tool results of every content kind a server sends.
func results() []*mcp.CallToolResult {
	return []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "three lines\nof text"},
			&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "file:///srv/a.txt", Name: "a.txt", MIMEType: "text/plain"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://r", MIMEType: "application/json", Text: `{"a":1}`}}},
			StructuredContent: map[string]any{"content": "three lines", "size": 12.0},
			Meta:              mcp.Meta{"example.com/trace": "t-1"}},
		{Content: []mcp.Content{}},
	}
}

// TestResultRoundTrip: a server's result hosted on the mesh
// (MeshResult), sent over the wire and served again (ServerResult), is
// the result it sent, less the connection's own _meta; a mesh result of
// an MCPResult tool, served and hosted again, is itself.
func TestResultRoundTrip(t *testing.T) {
	for _, res := range results() {
		withServerInfo := *res
		withServerInfo.Meta = mcp.Meta{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "s"}}
		for k, v := range res.Meta {
			withServerInfo.Meta[k] = v
		}
		wire, _ := json.Marshal(MeshResult(&withServerInfo))
		served, err := ServerResult(wire)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "MCP → mesh → MCP result", served, res)
		mesh := overTheWire[map[string]any](t, MeshResult(res))
		back, err := ServerResult(overTheWire[json.RawMessage](t, mesh))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "mesh → MCP → mesh result", MeshResult(back), mesh)
	}
}

// TestErrorRoundTrip: a server's error result becomes a tool_failed
// Problem for mesh callers and, through the wire, the very result again
// for an MCP client — no problem+json added; a Problem of no server
// carries none.
func TestErrorRoundTrip(t *testing.T) {
	for _, res := range results() {
		res.IsError = true
		p := ErrorProblem(res, redact.New())
		if p.Code != envelope.CodeToolFailed {
			t.Fatalf("error result → %s, want tool_failed", p.Code)
		}
		arrived := overTheWire[*envelope.Problem](t, p)
		got, ok := ErrorResult(arrived)
		if !ok {
			t.Fatalf("the Problem lost the server's result: %+v", arrived)
		}
		sameJSON(t, "MCP error → Problem → MCP error", got, res)
		again := ErrorProblem(got, redact.New())
		again.Instance = arrived.Instance // each Problem is an occurrence of its own
		sameJSON(t, "Problem → MCP error → Problem", again, arrived)
	}
	if _, ok := ErrorResult(envelope.NewProblem(envelope.CodeWorkerLost, "gone")); ok {
		t.Fatal("a Problem of no MCP server must not pass for a server's result")
	}
	refused := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "MCP error -32602: Input validation error: Invalid arguments for tool echo"}}}
	if p := ErrorProblem(refused, redact.New()); p.Code != envelope.CodeInvalidInput {
		t.Fatalf("the server refusing the arguments → %s, want invalid_input", p.Code)
	} else if got, _ := ErrorResult(p); got == nil {
		t.Fatal("the refusal lost the server's result")
	} else {
		sameJSON(t, "the server's refusal through the mesh", got, refused)
	}
	long := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(make([]byte, 5000))}}}
	if p := ErrorProblem(long, redact.New()); len(p.Detail) > maxErrorText+100 {
		t.Fatalf("the detail quotes %d bytes, want at most about %d", len(p.Detail), maxErrorText)
	}
}

// TestLogRoundTrip: a server's log message is the mesh's log event and
// back, whatever JSON its data is.
func TestLogRoundTrip(t *testing.T) {
	for _, p := range []*mcp.LoggingMessageParams{
		{Level: "info", Logger: "fixture", Data: "Tool execution started"},
		{Level: "error", Data: map[string]any{"error": "disk full", "free": 0.0}},
		{Level: "debug", Logger: "db", Data: []any{"a", 1.0, true}},
	} {
		l, err := LogMessage(p)
		if err != nil {
			t.Fatal(err)
		}
		arrived := overTheWire[envelope.LogMessage](t, l)
		sameJSON(t, "MCP → mesh → MCP log", LoggingParams(&arrived), p)
		again, err := LogMessage(overTheWire[*mcp.LoggingMessageParams](t, LoggingParams(&arrived)))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "mesh → MCP → mesh log", again, arrived)
	}
}

// TestProgress pins both directions of progress: a share of a total is
// the mesh's percentage, never going back; without one the raw value
// travels in the message; and the gateway writes the percentage first.
func TestProgress(t *testing.T) {
	cases := []struct {
		p        mcp.ProgressNotificationParams
		last     float64
		pct      float64
		msg, out string
	}{
		{mcp.ProgressNotificationParams{Progress: 50, Total: 100, Message: "Completed step 50 of 100"}, 0, 50, "Completed step 50 of 100", "50% Completed step 50 of 100"},
		{mcp.ProgressNotificationParams{Progress: 1, Total: 4, Message: "again"}, 50, 50, "again", "50% again"},
		{mcp.ProgressNotificationParams{Progress: 7, Message: "rows"}, 30, 30, "rows (7)", "30% rows (7)"},
	}
	for _, c := range cases {
		pct, msg := MeshProgress(&c.p, c.last)
		if pct != c.pct || msg != c.msg {
			t.Errorf("MeshProgress(%+v, %g) = %g %q, want %g %q", c.p, c.last, pct, msg, c.pct, c.msg)
		}
		if got := ProgressMessage(&pct, msg); got != c.out {
			t.Errorf("ProgressMessage = %q, want %q", got, c.out)
		}
	}
	if got := ProgressMessage(nil, "delta x"); got != "delta x" {
		t.Errorf("ProgressMessage without a percentage = %q", got)
	}
}

// sep1330 is an elicitation schema with every enum shape of SEP-1330:
// untitled and titled single-select, the legacy enumNames, untitled and
// titled multi-select, and defaults.
const sep1330 = `{"type":"object","properties":{` +
	`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"],"default":"option2"},` +
	`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"}]},` +
	`"legacyEnum":{"type":"string","enum":["opt1","opt2"],"enumNames":["Option One","Option Two"]},` +
	`"untitledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]},"default":["option1"]},` +
	`"titledMulti":{"type":"array","minItems":1,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"}]}}` +
	`},"required":["titledSingle"]}`

// TestElicitationRoundTrip: a server's elicitation, carried as a question
// and asked of an MCP client, is the request the server made — titled and
// multi-select enums unchanged — and the client's answer is the result
// the server gets.
func TestElicitationRoundTrip(t *testing.T) {
	for _, schema := range []string{sep1330, `{"type":"object","properties":{"name":{"type":"string"}}}`} {
		// As the bridge's SDK client decodes the server's request.
		sent := overTheWire[*mcp.ElicitParams](t, &mcp.ElicitParams{Mode: "form", Message: "Choose", RequestedSchema: json.RawMessage(schema)})
		msg, q, err := ElicitQuestion(sent)
		if err != nil {
			t.Fatal(err)
		}
		asked := overTheWire[*mcp.ElicitParams](t, ElicitParams(msg, q))
		sameJSON(t, "elicitation → question → elicitation", asked, sent)
	}
	if _, _, err := ElicitQuestion(&mcp.ElicitParams{Mode: "url", URL: "https://example.com/auth"}); err == nil {
		t.Fatal("a URL-mode elicitation must not become a question")
	}
	for _, res := range []*mcp.ElicitResult{
		{Action: "accept", Content: map[string]any{"titledSingle": "value2", "titledMulti": []any{"value1", "value2"}, "untitledMulti": []any{"option3"}}},
		{Action: "decline"}, {Action: "cancel"},
	} {
		action, content, ok := Answer(overTheWire[*mcp.ElicitResult](t, res))
		if !ok {
			t.Fatalf("Answer(%+v) refused", res)
		}
		sameJSON(t, "client result → answer → server result", ElicitResult(action, content), res)
	}
	if _, _, ok := Answer(&mcp.ElicitResult{Action: "maybe"}); ok {
		t.Fatal("an unknown action must not be an answer")
	}
}

// TestSamplingRoundTrip: a server's sampling request, carried as a
// sampling question, is the request the MCP client gets, and the
// client's text reply is the reply the server gets.
func TestSamplingRoundTrip(t *testing.T) {
	sent := &mcp.CreateMessageParams{MaxTokens: 100, SystemPrompt: "Be brief.", Temperature: 0.2,
		Messages:         []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is the mesh?"}}},
		ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "claude"}}, SpeedPriority: 0.5}}
	msg, params, err := SamplingQuestion(overTheWire[*mcp.CreateMessageParams](t, sent))
	if err != nil || msg != "system: Be brief.\nuser: What is the mesh?" {
		t.Fatalf("SamplingQuestion = %q, %v", msg, err)
	}
	asked, err := CreateMessageParams(params)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "sampling → question → sampling", asked, sent)
	reply := &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "A tool mesh."}, Model: "claude-x", StopReason: "endTurn"}
	ans, ok := SamplingAnswer(overTheWire[*mcp.CreateMessageResult](t, reply))
	if !ok {
		t.Fatal("a text reply must be an answer")
	}
	sameJSON(t, "client reply → answer → server reply", CreateMessageResult(overTheWire[envelope.SamplingAnswer](t, ans)), reply)
	if _, ok := SamplingAnswer(&mcp.CreateMessageResult{Content: &mcp.ImageContent{MIMEType: "image/png"}}); ok {
		t.Fatal("an image reply is nothing the answer form holds")
	}
}
