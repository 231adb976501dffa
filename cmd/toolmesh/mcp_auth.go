package main

import (
	"context"
	"net/url"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

// checkAuth checks the OAuth flags of `toolmesh mcp --http` before
// anything is dialled: an issuer needs the endpoint's audience URI, and a
// static bearer and OAuth exclude each other.
func (f *mcpFlags) checkAuth() error {
	if f.authIssuer == "" {
		if f.authAud != "" || len(f.authScopes) > 0 {
			return envelope.NewProblem(envelope.CodeInvalidConfig, "--auth-audience and --auth-scope need --auth-issuer")
		}
		return nil
	}
	if f.bearerEnv != "" {
		return envelope.NewProblem(envelope.CodeInvalidConfig, "--bearer-env and --auth-issuer exclude each other: a request carries one bearer")
	}
	for flag, v := range map[string]string{"--auth-issuer": f.authIssuer, "--auth-audience": f.authAud} {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return envelope.Problemf(envelope.CodeInvalidConfig, "%s %q: want an absolute http(s) URL", flag, v).
				WithFix("Give the endpoint's public URL, e.g. --auth-audience https://mcp.example.com/mcp.", envelope.HasPlaceholders)
		}
	}
	return nil
}

// resource reads the issuer's discovery document and keys and describes
// the endpoint as an OAuth protected resource.
func (f *mcpFlags) resource(ctx context.Context) (*oauth.Resource, error) {
	v, err := oauth.NewValidator(ctx, oauth.Config{Issuer: f.authIssuer, Audiences: []string{f.authAud}})
	if err != nil {
		return nil, envelope.NewProblem(envelope.CodeInvalidConfig, err.Error())
	}
	return &oauth.Resource{Validator: v, URI: f.authAud, Scopes: f.authScopes, Name: "toolmesh MCP gateway"}, nil
}
