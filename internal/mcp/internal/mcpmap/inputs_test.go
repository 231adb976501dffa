package mcpmap

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
)

// An MCP server's input requests travel as one question whose schema
// carries each under its key, compile as a question's schema must, and
// come back out keyed as they went in; the answer decodes into typed
// responses.
func TestInputsQuestionRoundTrip(t *testing.T) {
	reqs := mcp.InputRequestMap{
		"user_name":    &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
		"client_roots": &mcp.ListRootsParams{},
	}
	msg, schema, err := InputsQuestion(reqs)
	if err != nil || msg == "" {
		t.Fatalf("InputsQuestion = %q, %v", msg, err)
	}
	compiled, err := envelope.CompileSchema(schema)
	if err != nil {
		t.Fatalf("the question's schema does not compile: %v\n%s", err, schema)
	}
	got, ok := QuestionInputs(schema)
	if !ok || len(got) != 2 {
		t.Fatalf("QuestionInputs = %v, %v; want both keys", got, ok)
	}
	var r struct{ Method string }
	if err := json.Unmarshal(got["user_name"], &r); err != nil || r.Method != "elicitation/create" {
		t.Fatalf("user_name = %s, want its elicitation/create request", got["user_name"])
	}
	answer := json.RawMessage(`{"user_name":{"action":"accept","content":{"name":"Alice"}},"client_roots":{"roots":[{"uri":"file:///r"}]}}`)
	if errs := compiled.Validate(answer); len(errs) > 0 {
		t.Fatalf("a full answer is refused by the question's schema: %v", errs)
	}
	if errs := compiled.Validate(json.RawMessage(`{"user_name":{"action":"accept"}}`)); len(errs) == 0 {
		t.Fatal("an answer missing a key passes the question's schema")
	}
	responses, err := InputResponses(answer)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := responses["user_name"].(*mcp.ElicitResult); !ok || e.Content["name"] != "Alice" {
		t.Fatalf("user_name response = %#v", responses["user_name"])
	}
	if _, ok := responses["client_roots"].(*mcp.ListRootsResult); !ok {
		t.Fatalf("client_roots response = %#v", responses["client_roots"])
	}
}

// A question whose schema is an ordinary form is not an inputs question.
func TestQuestionInputsPlainForm(t *testing.T) {
	if _, ok := QuestionInputs(json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean"}}}`)); ok {
		t.Fatal("a plain form was taken for input requests")
	}
	if _, err := InputResponses(json.RawMessage(`{}`)); err == nil {
		t.Fatal("an empty answer decoded as input responses")
	}
}
