// Package authcallout is a NATS auth callout service (nats-server 2.10
// and later) that lets people onto the mesh with their OpenID token: a
// client connects with the token as its NATS token, the server asks this
// service, and the service validates the token (internal/oauth), maps the
// person by the operator's policy (internal/identity) and answers with a
// user JWT for the person's account, named as the person, with exactly
// the policy's permissions and expiring with the token. The server then
// enforces those permissions itself and stamps the person on every call.
//
// It serves the server-configuration form of auth callout
// (authorization { auth_callout { issuer, account, auth_users } }), whose
// responses the issuer key signs and whose target account is named in
// the user JWT's audience.
package authcallout
