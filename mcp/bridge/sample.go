package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// onSample answers a bridged server's sampling/createMessage with the
// mesh caller's answer to a sampling question (docs/protocol.md §23.11):
// its params travel verbatim, its message is the request's last text, and
// the accepted answer's text becomes the assistant's reply. Declared
// through ClientOptions.CreateMessageHandler, so the bridge tells every
// server it supports sampling. Like elicitation, it is put to the mesh
// caller only while exactly one call is in flight on the bridge; a
// decline, a cancel or no caller to ask is an error to the server, as an
// MCP client that refuses to sample answers.
func (b *Bridge) onSample(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	req, callCtx, n := b.askers.only()
	if req == nil {
		b.log.Warn("refused a server's sampling request: it cannot be tied to one call", "calls_in_flight", n)
		return nil, errors.New("sampling refused: the request cannot be tied to one mesh call")
	}
	params, err := json.Marshal(r.Params)
	if err != nil {
		return nil, err
	}
	askCtx, cancel := context.WithCancel(callCtx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // the server gave up on its request
	defer stop()
	a, err := req.Ask(askCtx, worker.Question{Message: samplingMessage(r.Params), Schema: envelope.SamplingAnswerSchema(), Sampling: params})
	if err != nil {
		return nil, errors.New("sampling refused: the mesh caller could not answer (" + outcomeOf(err) + ")")
	}
	if a.Action != envelope.ActionAccept {
		return nil, errors.New("sampling refused: the mesh caller answered " + a.Action)
	}
	var ans envelope.SamplingAnswer
	if err := json.Unmarshal(a.Content, &ans); err != nil {
		return nil, err
	}
	if ans.Model == "" {
		ans.Model = "unknown"
	}
	return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: ans.Text}, Model: ans.Model, StopReason: ans.StopReason}, nil
}

// samplingMessage is what a person answering by hand is shown: the
// request's text messages, the last one last.
func samplingMessage(p *mcp.CreateMessageParams) string {
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
		return "A tool asks for a model's reply."
	}
	return strings.Join(parts, "\n")
}
