package bridge

import (
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// toolDefs keeps each tool definition of the server's tools/list answers
// as the server sent it. The SDK decodes a tool into mcp.Tool, which has
// no execution member and cannot tell an absent readOnlyHint or
// idempotentHint from false; the mesh spec carries the server's own
// definition (envelope.MCPTool) so an MCP client of the gateway sees the
// tool exactly as it would directly. The connection reports what it
// writes (sent) and reads (received), the answer before the SDK hands it
// to the listing, so a tool's definition is here when the listing sees
// the tool.
type toolDefs struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool        // tools/list requests awaiting their answer
	defs    map[string]json.RawMessage // tool name → its definition, latest answer's
}

// sent notes a tools/list request written to the server.
func (d *toolDefs) sent(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if d == nil || !ok || !req.IsCall() || req.Method != "tools/list" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[jsonrpc.ID]bool{}
	}
	d.pending[req.ID] = true
}

// received keeps the definitions of a tools/list answer read from the
// server.
func (d *toolDefs) received(msg jsonrpc.Message) {
	res, ok := msg.(*jsonrpc.Response)
	if d == nil || !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.pending[res.ID] {
		return
	}
	delete(d.pending, res.ID)
	var page struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if res.Error != nil || json.Unmarshal(res.Result, &page) != nil {
		return
	}
	if d.defs == nil {
		d.defs = map[string]json.RawMessage{}
	}
	for _, raw := range page.Tools {
		var head struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Name != "" {
			d.defs[head.Name] = raw
		}
	}
}

// of returns the definition the server last listed for the tool name,
// nil when none was seen (a transport the bridge cannot tap).
func (d *toolDefs) of(name string) json.RawMessage {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.defs[name]
}
