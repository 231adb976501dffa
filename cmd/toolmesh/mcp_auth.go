package main

import (
	"context"
	"net/url"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/oauth"
	"github.com/toolmesh/toolmesh/internal/persons"
	"github.com/toolmesh/toolmesh/mesh"
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

// runMCPPeople serves HTTP with one gateway per person, each connected to
// the mesh as that person (auth callout maps their token), until ctx ends.
func runMCPPeople(ctx context.Context, f mcpFlags, g *globals) error {
	if f.http == "" || f.authIssuer == "" {
		return envelope.NewProblem(envelope.CodeInvalidConfig, "--auth-as-person needs --http and --auth-issuer")
	}
	r := persons.New(ctx, persons.Config{Dial: g.dialAsPerson, Caller: caller.Config{Prefix: g.prefix, Logger: g.log},
		Gateway: f.gatewayConfig(g), HTTP: f.httpOptions(), Max: f.maxPeople, Logger: g.log})
	defer r.Close()
	return serveMCPHTTP(ctx, r, f, g)
}

// dialAsPerson connects with the global connection flags (server, TLS)
// but authenticates only by the person's token, read again at every
// reconnect.
func (g *globals) dialAsPerson(ctx context.Context, token func() string) (*nats.Conn, error) {
	o := g.connect
	o.Creds, o.NKeySeed, o.Token, o.User, o.Password = "", "", "", "", ""
	o.Name, o.Logger = "toolmesh mcp person", g.log
	return mesh.Connect(ctx, o, nats.TokenHandler(token))
}
