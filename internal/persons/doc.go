// Package persons serves each person behind an OAuth-protected MCP
// endpoint with a gateway of their own: one NATS connection per person,
// authenticated as that person (their OpenID token as the NATS token,
// which the server's auth callout maps to their account, user and
// permissions), so every catalogue view, call, question and task of
// their sessions is theirs and a worker sees them in the call's
// identity. Connections are cached and bounded; a person's MCP sessions
// live in their own gateway, so one person cannot reach another's.
//
// It imports the public caller package because each person's gateway
// calls through a caller.Caller of its own, made on the person's
// connection. Serving MCP is internal/mcp/gateway's, validating the token
// internal/oauth's, and mapping the person the server's auth callout's
// (internal/authcallout).
package persons
