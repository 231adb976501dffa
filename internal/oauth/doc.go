// Package oauth makes a toolmesh HTTP endpoint an OAuth 2.1 resource
// server (the MCP authorization spec): it validates bearer JWTs that an
// OpenID provider issued, against the provider's discovery document and
// JWKS, and answers what RFC 6750 and RFC 9728 say a resource server
// answers. The same Validator checks the OpenID token a person presents
// to the mesh through NATS auth callout (internal/authcallout).
//
// It is also the bridge's OAuth client of remote MCP servers: client
// credentials, and the authorization code flow a person goes through once
// (toolmesh login, CodeFlow, Loopback) whose grant a worker keeps in a
// 0600 file (GrantFile) and refreshes. Discovery, registration, PKCE and
// step-up are the MCP Go SDK's auth package; tokens and refresh are
// golang.org/x/oauth2.
//
// JOSE is github.com/go-jose/go-jose/v4: it is the maintained successor
// of square/go-jose, already in the module graph through the MCP Go SDK,
// has no dependencies beyond the standard library and x/crypto, makes the
// caller name the signature algorithms it accepts on every parse (so
// "none" and HMAC can never slip in), and parses only compact JWS.
//
// Who a validated person is on the mesh is internal/identity's.
package oauth
