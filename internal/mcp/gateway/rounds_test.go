package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
)

// A request state resumes only the held call it names, for the tool it
// was issued for and the client (bearer) that made it, and only as the
// gateway signed it; every round's state differs.
func TestRequestState(t *testing.T) {
	r := newRounds()
	h := r.start("conf.ask", "bearer-1", &mcp.ClientCapabilities{}, nil, func() {})
	defer r.drop(h)
	s1, s2 := r.sign(h), r.sign(h)
	if s1 == s2 {
		t.Fatal("two rounds got the same request state")
	}
	if got, err := r.resume(s2, "conf.ask", "bearer-1"); err != nil || got != h {
		t.Fatalf("resume(signed state) = %v, %v; want the held call", got, err)
	}
	for name, state := range map[string]string{
		"tampered":  s1 + "-TAMPERED",
		"re-signed": strings.Replace(s1, ".", ".x", 1),
		"garbage":   "not a state",
	} {
		if _, err := r.resume(state, "conf.ask", "bearer-1"); err == nil || !strings.Contains(err.Error(), "integrity") {
			t.Errorf("%s state: err = %v, want an integrity failure", name, err)
		}
	}
	if _, err := r.resume(s1, "conf.other", "bearer-1"); err == nil {
		t.Error("a state resumed a call of another tool")
	}
	if _, err := newRounds().resume(s1, "conf.ask", "bearer-1"); err == nil {
		t.Error("another gateway's key accepted this gateway's state")
	}
	if _, err := r.resume(s2, "conf.ask", "bearer-2"); err == nil || !strings.Contains(err.Error(), "another client") {
		t.Errorf("a retry with another bearer: err = %v, want refused", err)
	}
	r.drop(h)
	if _, err := r.resume(s1, "conf.ask", "bearer-1"); err == nil || !strings.Contains(err.Error(), "no call waits") {
		t.Errorf("state of an ended call: err = %v", err)
	}
}

// A question becomes input requests only of the methods the client
// declared; an MCP server's requests keep their keys.
func TestInputsOfCapabilities(t *testing.T) {
	_, schema, err := mcpmap.InputsQuestion(mcp.InputRequestMap{
		"user_name": &mcp.ElicitParams{Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object"}`)},
		"greeting":  &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	oi := inputsOf(caller.Question{ID: "Q1", Schema: schema}, &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}})
	if _, ok := oi.inputs["greeting"]; !ok || len(oi.inputs) != 1 {
		t.Fatalf("inputs for a sampling-only client = %v, want only greeting", oi.inputs)
	}
	plain := inputsOf(caller.Question{ID: "Q2", Message: "ok?", Schema: json.RawMessage(`{"type":"object"}`)},
		&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}})
	if _, ok := plain.inputs["Q2"]; !ok {
		t.Fatalf("a plain question's inputs = %v, want it under its id", plain.inputs)
	}
	if got := inputsOf(caller.Question{ID: "Q3", Schema: json.RawMessage(`{"type":"object"}`)}, &mcp.ClientCapabilities{}); len(got.inputs) != 0 {
		t.Fatalf("a client with no capability got input requests %v", got.inputs)
	}
	a, ok := plain.answerFrom(mcp.InputResponseMap{"Q2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"x": 1.0}}, "extra": &mcp.ElicitResult{Action: "decline"}})
	if !ok || a.Action != "accept" || string(a.Content) != `{"x":1}` {
		t.Fatalf("answer = %+v, %v", a, ok)
	}
	if _, ok := plain.answerFrom(mcp.InputResponseMap{"wrong": &mcp.ElicitResult{Action: "accept"}}); ok {
		t.Fatal("a response under another key answered the question")
	}
}
