package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// describeUnknown is the receiving middleware that asks the mesh about a
// tools/call name the gateway does not serve before the SDK answers
// "unknown tool". A worker is callable as soon as it subscribes, but it
// reaches the registry (and so the catalogue and Watch) a moment later,
// in the background; an agent told "unknown tool" for a tool that exists
// gives up on it or picks another. catalog.Catalog.Describe asks the tool's own
// subject, so it finds such a worker; its spec is then served at once.
// The question costs one request, as the call itself would. A name
// still unknown then, under --namespace, goes to the bridged server
// behind the namespace (askServer).
func (g *Gateway) describeUnknown(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && !g.serves(r.Params.Name) {
			g.describe(ctx, r.Params.Name)
			if res, asked, err := g.askServer(ctx, r); asked {
				return res, err
			}
		}
		return next(ctx, method, req)
	}
}

// serves reports whether an MCP tool name is registered now.
func (g *Gateway) serves(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.served[name]
	return ok || (g.cfg.Progressive && name == g.cfg.NamePrefix+SearchToolName)
}

// meshName is the mesh tool an MCP name stands for, and whether the
// gateway would serve it if a worker hosted it: the filter allows it and,
// on a progressive gateway, it is pinned or revealed (an unrevealed tool
// is not callable, so asking the mesh about it would be wasted).
func (g *Gateway) meshName(served string) (string, bool) {
	rest, ok := strings.CutPrefix(served, g.cfg.NamePrefix)
	if !ok {
		return "", false
	}
	name := g.filter.namespace + rest
	g.mu.Lock()
	defer g.mu.Unlock()
	return name, g.filter.allows(name) && g.listed(name, served)
}

// describe serves the named tool if a worker on the mesh describes it;
// when none does, the SDK's "unknown tool" stands.
func (g *Gateway) describe(ctx context.Context, served string) {
	name, ok := g.meshName(served)
	if !ok {
		return
	}
	spec, err := g.cfg.Caller.Catalog().Describe(ctx, name)
	if err != nil || spec.Name != name {
		return
	}
	g.mu.Lock()
	view := g.lastView
	g.mu.Unlock()
	view.tools = append(slices.Clone(view.tools), catalog.Tool{Spec: spec, Instances: 1})
	g.apply(view)
}

// askServer answers a tools/call of a name the gateway does not serve,
// under --namespace, as the bridged server behind the namespace does
// (its surface op tools_call_unlisted): the server's error result or
// JSON-RPC error, exactly as it sent it, so the namespace's unknown tool
// looks as it does directly. asked is false when there is no such server
// (or it did not answer for itself): the SDK's "unknown tool" stands.
func (g *Gateway) askServer(ctx context.Context, req *mcp.CallToolRequest) (res mcp.Result, asked bool, err error) {
	if g.cfg.Namespace == "" || g.serves(req.Params.Name) {
		return nil, false, nil
	}
	if _, ok := g.meshName(req.Params.Name); !ok {
		return nil, false, nil
	}
	tool, ok := g.surfaceView()[g.cfg.Namespace][wire.MCPToolsCallUnlisted]
	if !ok {
		return nil, false, nil
	}
	name := strings.TrimPrefix(req.Params.Name, g.cfg.NamePrefix)
	args := map[string]any{"name": name}
	if a := req.Params.Arguments; len(a) > 0 && string(a) != "null" {
		args["arguments"] = a
	}
	var opts []caller.Option
	if bearer := bearerOf(req); bearer != "" {
		opts = append(opts, caller.WithBearer(bearer))
	}
	data, cerr := caller.CallAs[json.RawMessage](ctx, g.cfg.Caller, tool, args, opts...)
	if cerr == nil {
		out, derr := mcpmap.ServerResult(data)
		return out, derr == nil, derr
	}
	p := envelope.AsProblem(cerr, envelope.CodeInternal)
	if own, ok := mcpmap.ErrorResult(p); ok {
		return own, true, nil
	}
	if je := serverRPCError(p); je != nil {
		return nil, true, je
	}
	return nil, false, nil
}

// serverRPCError is the bridged server's own JSON-RPC error a Problem
// carries (mcp_error), with the server's data and nothing added; nil
// when it carries none.
func serverRPCError(p *envelope.Problem) *jsonrpc.Error {
	raw, ok := p.Extensions["mcp_error"]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	var e struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if json.Unmarshal(b, &e) != nil || e.Code == 0 {
		return nil
	}
	je := &jsonrpc.Error{Code: e.Code, Message: e.Message}
	if len(e.Data) > 0 && string(e.Data) != "null" {
		je.Data = e.Data
	}
	return je
}
