// Package identity tests toolmesh's identity features against a real
// OpenID provider (zitadel/oidc's op package). It is a module of its own
// so the product never depends on the provider.
package identity
