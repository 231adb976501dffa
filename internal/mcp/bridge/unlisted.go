package bridge

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// callUnlisted is tools/call of a name the server's last tools/list did
// not have (the surface op tools_call_unlisted): the MCP gateway serving
// the namespace asks it for a name it does not serve, so its client is
// told about an unknown tool as the server itself words it — an error
// result, or a JSON-RPC error (carried as mcp_error). A name the server
// listed, or the tools file skips, is not sent: the mesh does not host
// it, and this op is no way around that.
func callUnlisted(ctx context.Context, b *Bridge, sess *mcp.ClientSession, req *worker.Request, _ worker.Emitter) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	if b.listedByServer(p.Name) || slices.Contains(b.cfg.Entry.Server.Skip, p.Name) {
		return nil, envelope.Problemf(envelope.CodeToolNotFound, "the MCP server's tool %q is not hosted on the mesh", p.Name)
	}
	params := &mcp.CallToolParams{Name: p.Name, Arguments: p.Arguments}
	if len(p.Arguments) == 0 {
		params.Arguments = json.RawMessage(`{}`)
	}
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		return nil, err
	}
	return resultOf(res, b.secrets)
}

// listedByServer reports whether the server's last tools/list had name.
func (b *Bridge) listedByServer(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.listed[name]
}
