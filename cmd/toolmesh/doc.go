// Command toolmesh is the one binary of the toolmesh project: `dev` runs a
// complete single-node mesh, `worker` joins a mesh with tools from a YAML
// file, `call` invokes a tool, `tools` lists, searches, describes, exports
// and lints what the mesh offers, `mcp` serves the mesh's tools to MCP
// clients, `tasks` follows durable calls and runs the task service, `top`
// shows the fleet live, `audit` prints the audit trail, `explain` prints a
// Problem's reference page, `authcallout` lets people onto the mesh by
// their OpenID token, `login` authorizes the bridge at an OAuth-protected
// MCP server, and `bench` measures the mesh beside raw NATS. Every failure
// leaves through one path: a Problem rendered pretty on a terminal or as
// application/problem+json otherwise, with the Problem's exit code.
//
// It holds flags and rendering only. What a command does that a library
// user could need lives in the library (worker, worker/cli, caller,
// catalog, tasks) or under internal/ (the MCP gateway and bridge, the
// sandbox, auth callout); `toolmesh bench` is cmd/toolmesh/internal/bench,
// the OpenTelemetry SDK set-up cmd/toolmesh/internal/otlp, and the usage
// checks every command shares cmd/toolmesh/internal/usage.
package main
