// Package bridge hosts an MCP server's tools on the mesh. A tools-file
// entry `binding: {mcp: {...}}` with a `namespace` names a stdio server (a
// command the worker starts) or a streamable HTTP one (a URL); the bridge
// connects with the official MCP Go SDK, lists the server's tools and
// registers each as <namespace>.<tool> on a worker of its own, forwarding
// calls with progress and cancellation both ways. It follows the server's
// notifications/tools/list_changed, restarts a server that exits (with
// backoff; calls in flight get a worker_lost Problem), and stops it on
// Drain.
//
//	entries, _ := bridge.LoadFile("tools.yaml")
//	b, _ := bridge.Start(ctx, nc, bridge.Config{Entry: entries[0]})
//	defer b.Drain(context.Background())
//
// It imports the public worker and envelope packages because the bridge is
// a worker like any other: each bridged tool is a worker.Handler with an
// envelope.ToolSpec, and its failures are envelope's Problems. The MCP ↔
// mesh mapping is internal/mcp/internal/mcpmap's, confinement of a stdio
// server internal/sandbox's, and the OAuth client internal/oauth's.
package bridge
