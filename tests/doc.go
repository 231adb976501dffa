// Package tests holds the module's end-to-end tests and benchmarks: real
// nats-servers (embedded, and stock ones where a test needs one), the
// toolmesh command and the examples built and run as programs, the MCP
// gateway and bridge against MCP clients and servers, the sandbox, floods
// and kill -9s, and the transcripts the docs show. It has no code of its
// own; `make test` runs it.
//
// A package's unit tests live beside it, not here. Tests against the
// model providers' SDKs are tests/providersdk, and against a real OpenID
// provider tests/identity: each a module of its own, so the product never
// depends on them.
package tests
