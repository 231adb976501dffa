package mcpmap

import (
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/redact"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// The extensions of the Problem an MCP server's error result becomes
// (ErrorProblem): the result's content blocks, its structuredContent and
// its _meta, so ErrorResult gives the MCP client the result the server
// sent, and a mesh caller gets a Problem like any tool's.
const (
	ExtContent    = "mcp_content"
	ExtStructured = "mcp_structured_content"
	ExtMeta       = "mcp_meta"
)

// maxErrorText bounds the error text an error result's Problem detail
// quotes; the blocks themselves travel whole in ExtContent.
const maxErrorText = 2000

// MeshResult maps an MCP server's tool result (not an error) onto the
// mesh: the result is the MCP result itself — content blocks,
// structuredContent, _meta (ResultMeta) — as a tool whose spec sets
// MCPResult returns it; ServerResult is its inverse.
func MeshResult(res *mcp.CallToolResult) map[string]any {
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	out := map[string]any{"content": content}
	if res.StructuredContent != nil {
		out["structuredContent"] = res.StructuredContent
	}
	if meta := ResultMeta(res.Meta); len(meta) > 0 {
		out["_meta"] = meta
	}
	return out
}

// ServerResult decodes the mesh result of an MCPResult tool (MeshResult's
// output, as it came over the wire) into the MCP result it was.
func ServerResult(data json.RawMessage) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return &res, nil
}

// refusedArgs opens the error result in which a server built on the
// TypeScript SDK refuses arguments its input schema does not allow
// (McpError's "MCP error <code>: …" with InvalidParams).
const refusedArgs = "MCP error -32602:"

// ErrorProblem maps an MCP server's error result (isError) onto the mesh:
// a tool_failed Problem (invalid_input when the server refused the
// arguments, refusedArgs) whose detail quotes the result's text (redacted
// before it is cut, so no piece of a secret straddling the cut stays) and
// whose extensions carry the whole result (ExtContent, ExtStructured,
// ExtMeta); ErrorResult is its inverse.
func ErrorProblem(res *mcp.CallToolResult, secrets *redact.Redactor) *envelope.Problem {
	text, cut := secrets.Head(ContentText(res.Content), maxErrorText)
	if cut {
		text += "…"
	}
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	code := envelope.CodeToolFailed
	if strings.HasPrefix(text, refusedArgs) {
		code = envelope.CodeInvalidInput
	}
	p := envelope.NewProblem(code, "the MCP tool reported an error: "+text).WithExtension(ExtContent, content)
	if res.StructuredContent != nil {
		p = p.WithExtension(ExtStructured, res.StructuredContent)
	}
	if meta := ResultMeta(res.Meta); len(meta) > 0 {
		p = p.WithExtension(ExtMeta, meta)
	}
	return p
}

// ErrorResult is the MCP server's own error result a Problem carries
// (ErrorProblem's), exactly as the server sent it; false when p carries
// none (it did not come from an MCP server's error result).
func ErrorResult(p *envelope.Problem) (*mcp.CallToolResult, bool) {
	content, ok := p.Extensions[ExtContent]
	if !ok {
		return nil, false
	}
	wire := map[string]any{"isError": true, "content": content}
	if sc, ok := p.Extensions[ExtStructured]; ok {
		wire["structuredContent"] = sc
	}
	if meta, ok := p.Extensions[ExtMeta]; ok {
		wire["_meta"] = meta
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return nil, false
	}
	var res mcp.CallToolResult
	if json.Unmarshal(b, &res) != nil {
		return nil, false
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return &res, true
}

// StructuredResult maps the result of a mesh tool whose results are not
// MCP results onto MCP: structuredContent (Structured) plus its text.
func StructuredResult(data json.RawMessage) *mcp.CallToolResult {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	sc := Structured(data)
	// The caller validated the event's JSON: its text is the result's
	// text as it is, not encoded once more.
	return &mcp.CallToolResult{StructuredContent: sc, Content: []mcp.Content{&mcp.TextContent{Text: string(sc)}}}
}

// Structured returns data as an MCP structuredContent object: itself
// when it is an object, else {"result": data}.
func Structured(data json.RawMessage) json.RawMessage {
	if wire.IsObject(data) {
		return data
	}
	const open, end = `{"result":`, `}`
	b := make([]byte, 0, len(open)+len(data)+len(end))
	return append(append(append(b, open...), data...), end...)
}

// ResultMeta is a result's _meta without the keys the MCP project reserves
// (io.modelcontextprotocol/…, such as serverInfo): they describe the
// connection the result came over, and the gateway writes its own.
func ResultMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// ContentText is the text blocks of content, joined by spaces.
func ContentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}
