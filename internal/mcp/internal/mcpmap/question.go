package mcpmap

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// The mesh's questions (docs/protocol.md §23) are MCP's elicitation and
// sampling requests: a server's request becomes a question of the call it
// belongs to (bridge), and a question becomes the request to the MCP
// client (gateway). The requested schema travels as the bytes the server
// sent — titled and multi-select enums (oneOf/anyOf of const and title,
// arrays of enum items) among it — and the answer's content as the
// client's.

// errURLMode: a URL-mode elicitation asks a person to open a URL, which
// is nothing a mesh caller can be shown safely.
var errURLMode = errors.New("a URL-mode elicitation is not a question the mesh carries")

// ElicitQuestion maps a server's elicitation/create onto a question's
// message and answer schema ({"type":"object"} when it requests none);
// ElicitParams is its inverse. A URL-mode elicitation is an error.
func ElicitQuestion(p *mcp.ElicitParams) (message string, schema json.RawMessage, err error) {
	if p.Mode == "url" {
		return "", nil, errURLMode
	}
	if p.RequestedSchema == nil {
		return p.Message, json.RawMessage(`{"type":"object"}`), nil
	}
	if raw, ok := p.RequestedSchema.(json.RawMessage); ok {
		return p.Message, raw, nil
	}
	raw, err := json.Marshal(p.RequestedSchema)
	return p.Message, raw, err
}

// ElicitParams is the form-mode elicitation/create that asks an MCP
// client a question.
func ElicitParams(message string, schema json.RawMessage) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: schema}
}

// Answer maps an MCP client's elicitation result onto a question's
// answer: its action and, on accept, its content (an object, {} when the
// client sent none). ok is false for an action the mesh does not know.
func Answer(res *mcp.ElicitResult) (action string, content json.RawMessage, ok bool) {
	if res == nil || !wire.ValidAction(res.Action) {
		return "", nil, false
	}
	if res.Action != envelope.ActionAccept {
		return res.Action, nil, true
	}
	c := res.Content
	if c == nil {
		c = map[string]any{}
	}
	content, err := json.Marshal(c)
	return res.Action, content, err == nil
}

// ElicitResult maps a question's answer onto the elicitation result a
// server gets, the inverse of Answer: content that is not a JSON object
// is nothing the server asked for, and is a cancel.
func ElicitResult(action string, content json.RawMessage) *mcp.ElicitResult {
	res := &mcp.ElicitResult{Action: action}
	if action == envelope.ActionAccept && json.Unmarshal(content, &res.Content) != nil {
		return &mcp.ElicitResult{Action: envelope.ActionCancel}
	}
	return res
}

// SamplingQuestion maps a server's sampling/createMessage onto a sampling
// question (docs/protocol.md §23.11): the message a person answering by
// hand is shown (the request's text messages, the last one last) and the
// params verbatim; its schema is envelope.SamplingAnswerSchema.
// CreateMessageParams is its inverse.
func SamplingQuestion(p *mcp.CreateMessageParams) (message string, params json.RawMessage, err error) {
	params, err = json.Marshal(p)
	if err != nil {
		return "", nil, err
	}
	var parts []string
	if p.SystemPrompt != "" {
		parts = append(parts, "system: "+p.SystemPrompt)
	}
	for _, m := range p.Messages {
		if t, ok := m.Content.(*mcp.TextContent); ok {
			parts = append(parts, string(m.Role)+": "+t.Text)
		}
	}
	if len(parts) == 0 {
		return "A tool asks for a model's reply.", params, nil
	}
	return strings.Join(parts, "\n"), params, nil
}

// CreateMessageParams decodes a sampling question's params into the
// sampling/createMessage an MCP client is sent.
func CreateMessageParams(raw json.RawMessage) (*mcp.CreateMessageParams, error) {
	var p mcp.CreateMessageParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// SamplingAnswer maps an MCP client's sampling reply onto a sampling
// question's answer; false when it is not text (nothing the answer form
// holds). CreateMessageResult is its inverse.
func SamplingAnswer(res *mcp.CreateMessageResult) (envelope.SamplingAnswer, bool) {
	text, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return envelope.SamplingAnswer{}, false
	}
	return envelope.SamplingAnswer{Text: text.Text, Model: res.Model, StopReason: res.StopReason}, true
}

// CreateMessageResult is the sampling reply a server gets for an
// accepted sampling answer: the assistant's text, its model ("unknown"
// when the answer names none) and stop reason.
func CreateMessageResult(ans envelope.SamplingAnswer) *mcp.CreateMessageResult {
	if ans.Model == "" {
		ans.Model = "unknown"
	}
	return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: ans.Text}, Model: ans.Model, StopReason: ans.StopReason}
}
