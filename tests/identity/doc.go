// Package identity tests toolmesh's identity features against a real
// OpenID provider (zitadel/oidc's op package). It is a module of its own
// so the product never depends on the provider; run it with
// `make test-identity`.
package identity
