package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
)

// elicitOptions declare that a call answers questions when its MCP client
// declared the elicitation capability (form mode) or the sampling one in
// initialize (docs/protocol.md §23.8, §23.11): a sampling question goes to
// a client that samples as sampling/createMessage, every other question
// (and a sampling question to a client that only elicits) as
// elicitation/create. A question the client cannot take ends the call
// input_required. Other clients — those with neither capability, and
// 2026-07-28 clients, to which a server may not send requests mid-call —
// get the non-interactive outcome: the mesh call declares nothing and a
// question ends it with input_required.
func elicitOptions(req *mcp.CallToolRequest) []caller.Option {
	ss := req.Session
	if ss == nil {
		return nil
	}
	ip := ss.InitializeParams()
	elicits, samples := canElicit(ip), canSample(ip)
	if !elicits && !samples {
		return nil
	}
	return []caller.Option{caller.OnQuestion(func(ctx context.Context, q caller.Question) (caller.Answer, error) {
		switch {
		case q.Sampling != nil && samples:
			return sample(ctx, ss, q), nil
		case elicits:
			return elicit(ctx, ss, q), nil
		}
		return caller.Answer{}, envelope.NewProblem(envelope.CodeInputRequired,
			"the tool asked a question and this MCP client takes only sampling requests: "+q.Message).
			WithExtension("question", map[string]any{"question_id": q.ID, "message": q.Message, "schema": q.Schema})
	})}
}

// canSample reports whether a session's client takes sampling requests
// during a call.
func canSample(ip *mcp.InitializeParams) bool {
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Sampling != nil && ip.ProtocolVersion < protocolStateless
}

// sample asks the client's model with the question's sampling params; the
// reply's text is the answer. A failed request, or a reply that is not
// text, is a cancel: nothing the question's form can hold.
func sample(ctx context.Context, ss *mcp.ServerSession, q caller.Question) caller.Answer {
	params, err := mcpmap.CreateMessageParams(q.Sampling)
	if err != nil {
		return caller.Dismiss()
	}
	res, err := ss.CreateMessage(ctx, params)
	if err != nil {
		return caller.Dismiss()
	}
	ans, ok := mcpmap.SamplingAnswer(res)
	if !ok {
		return caller.Dismiss()
	}
	a, err := caller.Accept(ans)
	if err != nil {
		return caller.Dismiss()
	}
	return a
}

// canElicit reports whether a session's client takes form elicitation
// requests during a call.
func canElicit(ip *mcp.InitializeParams) bool {
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil || ip.ProtocolVersion >= protocolStateless {
		return false
	}
	caps := ip.Capabilities.Elicitation
	return caps.Form != nil || caps.URL == nil // neither set means form (MCP's default)
}

// elicit asks the client; a failed request (the client errs, refuses the
// schema or goes away) is a cancel: nobody chose.
func elicit(ctx context.Context, ss *mcp.ServerSession, q caller.Question) caller.Answer {
	res, err := ss.Elicit(ctx, mcpmap.ElicitParams(elicitMessage(q), q.Schema))
	if err != nil {
		return caller.Dismiss()
	}
	action, content, ok := mcpmap.Answer(res)
	if !ok {
		return caller.Dismiss()
	}
	return caller.Answer{Action: action, Content: content}
}

// elicitMessage is the text the client shows: the question, and for an
// approval the tool and its arguments.
func elicitMessage(q caller.Question) string {
	if q.Approval == nil {
		return q.Message
	}
	return fmt.Sprintf("%s\ntool: %s\nargs: %s", q.Message, q.Approval.Tool, q.Approval.Args)
}
