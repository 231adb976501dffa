// Package mcpmap maps MCP onto the mesh and back, once for both
// directions: the bridge (mcp/bridge) maps a server's MCP onto the mesh
// with it, and the gateway (mcp/gateway) maps the mesh onto MCP for its
// clients with the inverse, so a server bridged onto the mesh and served
// again by the gateway reaches an MCP client as it would directly.
//
// It holds pure mappings, each beside its inverse: tool definitions
// (Spec ↔ Tool: schemas, title, annotations), tool results and error
// results (MeshResult, ErrorProblem ↔ ServerResult, ErrorResult), log
// messages and progress (LogMessage ↔ LoggingParams, MeshProgress ↔
// ProgressMessage), elicitation and sampling as mesh questions, and the
// reserved _meta keys a relayed result drops. Connections, sessions and
// calls stay in the bridge and the gateway; this package starts nothing
// and imports neither of them.
//
// It imports the public envelope package because the mesh side of every
// mapping is envelope's: a tool definition is an envelope.ToolSpec with
// envelope.Annotations, an error result an envelope.Problem, and log
// messages, questions and sampling answers are envelope's shapes.
package mcpmap
