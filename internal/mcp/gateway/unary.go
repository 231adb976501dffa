package gateway

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// relayKind is how the gateway calls one mesh tool.
type relayKind struct {
	// mcpResult: the tool's results are MCP tool results already.
	mcpResult bool
	// unaryFits: nothing the tool sends before its result can reach the
	// MCP client unless the client asks for it — the tool declares no
	// deltas (not streaming) and is not a bridged MCP server's (whose log
	// messages and progress are relayed) — so a call whose client gave no
	// progress token and asked for no log messages can be a unary mesh
	// call: one message each way, coalesced with others, instead of a
	// stream. (A command-line tool that does not declare streaming then
	// returns its output lines in its result, as it does to any unary
	// caller, rather than as deltas before it.)
	unaryFits bool
	// digest names the spec served (wire.SpecDigest), and spec sends it
	// with every call (caller.WithSpec): a call runs only on a worker
	// giving the spec its client was shown (docs/protocol.md §14.1).
	digest string
	spec   caller.Option
	// serverArgs: a bridged MCP server's tool (spec mcp), whose args the
	// gateway leaves to the server (caller.WithServerArgs).
	serverArgs bool
	// retrySafe: the spec declares the tool idempotent or read-only, so
	// its calls go as caller.Idempotent ones (see relayOf).
	retrySafe bool
}

// relayOf is how the gateway calls the tool spec describes. A tool whose
// own spec declares it idempotent or read-only is called as the Go
// caller calls a tool declared so (caller.Idempotent): its worker may
// start it without first waiting for the server to confirm the heartbeat
// naming it (docs/protocol.md §8.2, "Confirmation where it buys
// something"), a call lost before any worker named it says ran "maybe",
// and transient failures are retried, all safe for such a tool. A bridged
// MCP server's tool is left out: its annotations are the server's hints,
// which MCP says not to rely on.
func relayOf(s envelope.ToolSpec) relayKind {
	return relayKind{mcpResult: s.MCPResult, unaryFits: !s.Streaming && !s.MCPResult,
		digest: wire.SpecDigest(s), spec: caller.WithSpec(s), serverArgs: s.MCP != nil,
		retrySafe: s.MCP == nil && (s.Annotations.IsIdempotent() || s.Annotations.IsReadOnly())}
}

// logSessions are the MCP sessions that asked for log messages
// (logging/setLevel); a session leaves the set when it ends.
type logSessions struct{ m sync.Map }

// noteLogLevel is a receiving middleware that records the sessions
// whose clients set a log level.
func (g *Gateway) noteLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			if _, loaded := g.logging.m.LoadOrStore(ss, struct{}{}); !loaded {
				go func() {
					_ = ss.Wait()
					g.logging.m.Delete(ss)
				}()
			}
		}
		return res, err
	}
}

// wantsEvents reports whether the client of a tools/call may be sent
// anything before its result: it gave a progress token, set a log level
// on its session, or (revision 2026-07-28) names a log level in the
// request's _meta.
func (g *Gateway) wantsEvents(req *mcp.CallToolRequest) bool {
	if req.Params.GetProgressToken() != nil {
		return true
	}
	if _, ok := req.Params.GetMeta()[mcp.MetaKeyLogLevel]; ok {
		return true
	}
	if req.Session == nil {
		return false
	}
	_, ok := g.logging.m.Load(req.Session)
	return ok
}

// callUnary runs one tools/call as a unary mesh call: the terminal event
// becomes the result as a stream's would (there are no deltas to gather).
func (g *Gateway) callUnary(ctx context.Context, meshTool string, args json.RawMessage, opts []caller.Option) *mcp.CallToolResult {
	_, ev := g.cfg.Caller.CallEvent(ctx, meshTool, args, opts...)
	if ev.Type == envelope.EventResult {
		return resultOf(ev.Data, deltaLog{})
	}
	p := ev.Problem()
	if p == nil {
		p = envelope.NewProblem(envelope.CodeMissingTerminal, "the mesh call ended without a terminal event")
	}
	return problemResult(p)
}
