package mcpgateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
)

// elicitOptions declare that a call answers questions when its MCP client
// declared the elicitation capability (form mode) in initialize, and turn
// each question into elicitation/create to that client (docs/protocol.md
// §23.8). Other clients — those without the capability, and 2026-07-28
// clients, to which a server may not send requests mid-call — get the
// non-interactive outcome: the mesh call declares nothing and a question
// ends it with input_required.
func elicitOptions(req *mcp.CallToolRequest) []caller.Option {
	ss := req.Session
	if ss == nil || !canElicit(ss.InitializeParams()) {
		return nil
	}
	return []caller.Option{caller.OnQuestion(func(ctx context.Context, q caller.Question) (caller.Answer, error) {
		return elicit(ctx, ss, q), nil
	})}
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
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: elicitMessage(q), RequestedSchema: q.Schema})
	if err != nil || !envelope.ValidAction(res.Action) {
		return caller.Dismiss()
	}
	a := caller.Answer{Action: res.Action}
	if res.Action == envelope.ActionAccept {
		content := res.Content
		if content == nil {
			content = map[string]any{}
		}
		a.Content, _ = json.Marshal(content)
	}
	return a
}

// elicitMessage is the text the client shows: the question, and for an
// approval the tool and its arguments.
func elicitMessage(q caller.Question) string {
	if q.Approval == nil {
		return q.Message
	}
	return fmt.Sprintf("%s\ntool: %s\nargs: %s", q.Message, q.Approval.Tool, q.Approval.Args)
}
