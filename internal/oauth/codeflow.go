package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// CodeFlow configures an OAuth client of an MCP server that a person
// authorizes (the MCP authorization spec's authorization code grant with
// PKCE): the client discovers the server's protected-resource metadata
// (RFC 9728) and its authorization server's (RFC 8414, or OpenID
// discovery), registers (a client ID metadata document, a pre-registered
// client, or dynamic registration, RFC 7591), asks for the scopes the
// server names (and offline_access, for a refresh token), and asks again
// with more on a 403 insufficient_scope. The grant it gets is saved to
// File and refreshed there.
type CodeFlow struct {
	// Resource is the MCP server's URL.
	Resource string
	// File keeps the grant.
	File *GrantFile
	// ClientID and ClientSecret are a pre-registered client (the secret
	// only for a confidential one). Without a ClientID an interactive
	// login registers a client dynamically, and later runs use the client
	// stored with the grant.
	ClientID, ClientSecret string
	// ClientMetadataURL is the client's ID metadata document (an https
	// URL), used as its client_id where the authorization server supports
	// that.
	ClientMetadataURL string
	// Issuer, when set, is the authorization server a pre-registered
	// client belongs to: a server naming another is refused.
	Issuer string
	// Scopes are asked for besides those the server names (its
	// WWW-Authenticate challenge, else its metadata's scopes_supported):
	// the scopes a tool call steps up to, say, so one login covers them.
	Scopes []string
	// Authorize, for an interactive login, shows the person the
	// authorization URL and returns the code (Loopback.Fetcher), with
	// RedirectURL its redirect URI. Nil for a worker: it uses the stored
	// grant, and a server asking for a new authorization fails the
	// request with ErrLoginRequired.
	Authorize   auth.AuthorizationCodeFetcher
	RedirectURL string
	// HTTPClient makes the discovery, registration and token requests
	// (default http.DefaultClient).
	HTTPClient *http.Client
}

// ErrLoginRequired is the error of a worker's client when the server wants
// an authorization only a person can give (no stored grant, a refresh
// token that stopped working, or more scope).
var ErrLoginRequired = errors.New("the server needs a new login: run toolmesh login")

// redirectPlaceholder is the redirect URI a worker's handler is built
// with: it never sends a person anywhere.
const redirectPlaceholder = "http://127.0.0.1/callback"

// NewCodeFlowHandler is the OAuth handler of c for the MCP SDK's
// streamable client transport. A worker's (no Authorize) needs a stored
// grant for the same server.
func NewCodeFlowHandler(c CodeFlow) (auth.OAuthHandler, error) {
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		Client:              c.HTTPClient,
		RequestRefreshToken: true,
		RedirectURL:         c.RedirectURL,
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			return c.newSource(ctx, cfg, tok)
		},
	}
	if c.ClientID != "" {
		hc.PreregisteredClient = c.preregistered(c.ClientID, c.ClientSecret)
	}
	if c.Authorize == nil {
		return c.workerHandler(hc)
	}
	hc.AuthorizationCodeFetcher = c.Authorize
	if len(c.Scopes) > 0 {
		hc.ScopeFilter = func(discovered []string) []string {
			out := slices.Clone(discovered)
			for _, s := range c.Scopes {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out
		}
	}
	if c.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: c.ClientMetadataURL}
	}
	hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{c.RedirectURL}, ClientName: "toolmesh",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}}
	return auth.NewAuthorizationCodeHandler(hc)
}

// workerHandler is the handler of a worker: the stored grant's client
// and token, and no person to ask.
func (c CodeFlow) workerHandler(hc *auth.AuthorizationCodeHandlerConfig) (auth.OAuthHandler, error) {
	g, err := c.File.Load()
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrLoginRequired, err)
	}
	if g.Resource != c.Resource {
		return nil, fmt.Errorf("%w: the login stored at %s is for another server", ErrLoginRequired, c.File.Path)
	}
	if c.ClientID != "" && g.ClientID != c.ClientID {
		return nil, fmt.Errorf("%w: the login stored at %s is for another client", ErrLoginRequired, c.File.Path)
	}
	hc.PreregisteredClient = c.preregistered(g.ClientID, g.ClientSecret)
	hc.RedirectURL = redirectPlaceholder
	hc.AuthorizationCodeFetcher = loginRequired
	src := newSavingSource(g, c.File, c.grantSource)
	hc.InitialTokenSource = src
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return nil, err
	}
	return workerHandler{AuthorizationCodeHandler: h, src: src}, nil
}

// loginRequired is a worker's authorization step: it cannot send a
// person anywhere, so it says which scope the login must give.
func loginRequired(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	if u, err := url.Parse(args.URL); err == nil && u.Query().Get("scope") != "" {
		return nil, fmt.Errorf("%w (the server asks for scope %q; list any missing one in the binding's oauth.scopes)", ErrLoginRequired, u.Query().Get("scope"))
	}
	return nil, ErrLoginRequired
}

// preregistered is a pre-registered client's credentials.
func (c CodeFlow) preregistered(id, secret string) *oauthex.ClientCredentials {
	cc := &oauthex.ClientCredentials{ClientID: id, Issuer: c.Issuer}
	if secret != "" {
		cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
	}
	return cc
}

// newSource is the token source of a fresh authorization: the grant is
// saved at once, and again whenever the token is refreshed.
func (c CodeFlow) newSource(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	g := Grant{Resource: c.Resource, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		TokenURL: cfg.Endpoint.TokenURL, AuthStyle: cfg.Endpoint.AuthStyle, Scopes: cfg.Scopes, Token: tok}
	if err := c.File.Save(&g); err != nil {
		return nil, fmt.Errorf("saving the login to %s: %v", c.File.Path, err)
	}
	return newSavingSource(&g, c.File, c.grantSource), nil
}

// grantSource is the refreshing token source of a stored grant.
func (c CodeFlow) grantSource(g *Grant) oauth2.TokenSource {
	cfg := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return cfg.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, hc), g.Token)
}

// workerHandler is a worker's handler: a 401 for a token not yet expired
// (revoked, or the server lost its session) is answered by refreshing
// it, as the grant allows without a person; anything else goes to the
// SDK's handler, which fails with ErrLoginRequired.
type workerHandler struct {
	*auth.AuthorizationCodeHandler
	src *savingSource
}

// Authorize refreshes on a 401, or asks for a person.
func (h workerHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized && h.src.expire() {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	return h.AuthorizationCodeHandler.Authorize(ctx, req, resp)
}
