// Package identity maps a person, as an OpenID token names them, to who
// they are on the mesh: a NATS account, a user name and the tools they
// may call. The operator writes the mapping as a small YAML policy; auth
// callout (internal/authcallout) turns it into a NATS user with exactly
// those permissions, so the server itself enforces it and workers see the
// person in every call's identity. There is no second permission system.
// Validating the token is internal/oauth's, and answering the server
// internal/authcallout's.
//
// It imports the public envelope package, as few internal packages do,
// because a policy's errors are Problems (invalid_config) and a tool
// pattern is checked by envelope's one tool-name rule.
package identity
