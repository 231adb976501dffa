// Package gateway serves the mesh's tools to MCP clients: tools/list
// comes from the mesh catalogue, tools/call becomes a mesh call. It is
// built on the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk),
// which carries the protocol itself — both the 2025-11-25 session model
// (initialize) and the stateless 2026-07-28 model (server/discover,
// subscriptions/listen, resultType, ttlMs/cacheScope) — so this package
// only maps mesh concepts onto it.
//
//	g, _ := gateway.New(gateway.Config{Caller: c})
//	_ = g.Sync(ctx)               // the first tool list
//	go g.Run(ctx)                 // keeps it in step with the fleet
//	_ = g.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// It imports the public caller, catalog, tasks and envelope packages
// because the gateway is a client of the mesh like any program: it calls
// through a caller.Caller, lists and watches tools through its
// catalog.Catalog, runs MCP tasks as durable tasks (tasks.Client), and
// answers with envelope's events and Problems. The MCP ↔ mesh mapping is
// internal/mcp/internal/mcpmap's; a gateway per person behind OAuth is
// internal/persons'.
package gateway
