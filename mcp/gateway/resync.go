package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/catalog"
)

// describeUnknown is the receiving middleware that asks the mesh about a
// tools/call name the gateway does not serve before the SDK answers
// "unknown tool". A worker is callable as soon as it subscribes, but it
// reaches the registry (and so the catalogue and Watch) a moment later,
// in the background; an agent told "unknown tool" for a tool that exists
// gives up on it or picks another. catalog.Catalog.Describe asks the tool's own
// subject, so it finds such a worker; its spec is then served at once.
// The question costs one request, as the call itself would.
func (g *Gateway) describeUnknown(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && !g.serves(r.Params.Name) {
			g.describe(ctx, r.Params.Name)
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
