package bridge

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/worker"
)

// onSample answers a bridged server's sampling/createMessage with the
// mesh caller's answer to a sampling question (docs/protocol.md §23.11;
// mcpmap.SamplingQuestion, mcpmap.CreateMessageResult). Set only when the
// binding lists sampling in client_capabilities, so the bridge declares
// the capability to a server only then. Like elicitation, it is put to
// the mesh caller only while exactly one call is in flight on the bridge;
// a decline, a cancel or no caller to ask is an error to the server, as
// an MCP client that refuses to sample answers.
func (b *Bridge) onSample(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	req, callCtx, n := b.askers.only()
	if req == nil {
		b.log.Warn("refused a server's sampling request: it cannot be tied to one call", "calls_in_flight", n)
		return nil, errors.New("sampling refused: the request cannot be tied to one mesh call")
	}
	message, params, err := mcpmap.SamplingQuestion(r.Params)
	if err != nil {
		return nil, err
	}
	askCtx, cancel := context.WithCancel(callCtx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // the server gave up on its request
	defer stop()
	a, err := req.Ask(askCtx, worker.Question{Message: message, Schema: envelope.SamplingAnswerSchema(), Sampling: params})
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
	return mcpmap.CreateMessageResult(ans), nil
}
