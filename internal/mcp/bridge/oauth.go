package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

// oauthHandler is the OAuth client of a url binding: client credentials,
// or (login: true) the grant a person left with toolmesh login, which it
// refreshes and saves again. authorize is nil in a worker; toolmesh login
// passes the person's authorization step and its redirect URI.
func oauthHandler(e Entry, authorize auth.AuthorizationCodeFetcher, redirect string) (auth.OAuthHandler, error) {
	c := e.Server.OAuth
	if !c.Login {
		return oauth.NewClientCredentialsHandler(c.ClientID, c.secret(), c.Issuer)
	}
	path, err := c.grantPath(e.Namespace)
	if err != nil {
		return nil, err
	}
	return oauth.NewCodeFlowHandler(oauth.CodeFlow{Resource: e.Server.URL, File: &oauth.GrantFile{Path: path},
		ClientID: c.ClientID, ClientSecret: c.secret(), ClientMetadataURL: c.ClientMetadataURL, Issuer: c.Issuer, Scopes: c.Scopes,
		Authorize: authorize, RedirectURL: redirect})
}

// grantPath is where the login of the binding in namespace ns is kept.
func (o *OAuthClient) grantPath(ns string) (string, error) {
	if o.TokenFile != "" {
		return o.TokenFile, nil
	}
	return oauth.DefaultGrantPath(ns)
}

// LoginResult is what a successful Login reports: nothing secret.
type LoginResult struct {
	// GrantFile is where the login is kept (mode 0600).
	GrantFile string
	// Tools is how many tools the server offered once authorized.
	Tools int
}

// Login authorizes a binding's OAuth client as a person, once (the
// binding's `oauth: {login: true}`): the authorization code grant with
// PKCE, its redirect received on a loopback address (RFC 8252). open
// shows the person the authorization URL (a browser). Login connects to
// the server, lists its tools to prove the authorization, and leaves the
// grant (with its refresh token) in the binding's token file, where the
// worker's bridge uses and refreshes it. Errors never show a token or
// the client secret.
func Login(ctx context.Context, e Entry, open func(ctx context.Context, authURL string) error) (LoginResult, error) {
	sc := e.Server
	if sc.URL == "" || sc.OAuth == nil || !sc.OAuth.Login {
		return LoginResult{}, envelope.Problemf(envelope.CodeInvalidConfig,
			"mcp namespace %s: toolmesh login needs a url binding with oauth: {login: true}", e.Namespace)
	}
	path, err := sc.OAuth.grantPath(e.Namespace)
	if err != nil {
		return LoginResult{}, envelope.Problemf(envelope.CodeInvalidConfig, "mcp namespace %s: %v", e.Namespace, err)
	}
	lb, err := oauth.ListenLoopback()
	if err != nil {
		return LoginResult{}, envelope.Problemf(envelope.CodeInternal, "mcp namespace %s: %v", e.Namespace, err)
	}
	defer lb.Close()
	n, err := loginSession(ctx, e, lb.Fetcher(open), lb.RedirectURL())
	if err != nil {
		secrets := serverSecrets(sc)
		if g, gerr := (&oauth.GrantFile{Path: path}).Load(); gerr == nil {
			secrets = secrets.With(g.ClientSecret, g.Token.AccessToken, g.Token.RefreshToken)
		}
		msg := secrets.String(err.Error())
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return LoginResult{}, envelope.Problemf(envelope.CodeTimeout, "mcp namespace %s: login: %s", e.Namespace, msg)
		}
		return LoginResult{}, envelope.Problemf(envelope.CodeUnauthorized, "mcp namespace %s: login: %s", e.Namespace, msg)
	}
	if _, err := (&oauth.GrantFile{Path: path}).Load(); errors.Is(err, oauth.ErrNoGrant) {
		return LoginResult{}, envelope.Problemf(envelope.CodeInvalidConfig,
			"mcp namespace %s: the server never asked for authorization, so there is no login to keep; drop oauth from the binding", e.Namespace)
	}
	return LoginResult{GrantFile: path, Tools: n}, nil
}

// loginSession connects with the interactive handler (the transport
// authorizes on the server's first 401) and counts the server's tools.
func loginSession(ctx context.Context, e Entry, authorize auth.AuthorizationCodeFetcher, redirect string) (int, error) {
	h, err := oauthHandler(e, authorize, redirect)
	if err != nil {
		return 0, err
	}
	sc := e.Server
	t := &mcp.StreamableClientTransport{Endpoint: sc.URL, OAuthHandler: h,
		HTTPClient: &http.Client{Transport: headerTransport{headers: sc.Headers, next: http.DefaultTransport}}}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolmesh-login", Version: "0.1.0"}, nil)
	proto := sc.Protocol
	if proto == "" {
		proto = protocolSession
	}
	sess, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	n := 0
	for _, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return 0, fmt.Errorf("listing the tools: %w", err)
		}
		n++
	}
	return n, nil
}

// authWatch is the OAuth handler of a url binding, keeping its last
// failure: the SDK's transport reduces a request it could not authorize
// to a bare "rejected by transport", and the call's Problem should say
// why (a stored login that stopped working) and what to do.
type authWatch struct {
	auth.OAuthHandler
	mu   sync.Mutex
	last error
}

func (a *authWatch) set(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = err
}

// failed is the last authorization failure (nil after a success).
func (a *authWatch) failed() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// TokenSource watches the tokens the handler hands out.
func (a *authWatch) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	ts, err := a.OAuthHandler.TokenSource(ctx)
	if err != nil || ts == nil {
		a.set(err)
		return ts, err
	}
	return watchedSource{ts: ts, w: a}, nil
}

// Authorize watches the handler's authorizations.
func (a *authWatch) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := a.OAuthHandler.Authorize(ctx, req, resp)
	a.set(err)
	return err
}

type watchedSource struct {
	ts oauth2.TokenSource
	w  *authWatch
}

func (s watchedSource) Token() (*oauth2.Token, error) {
	t, err := s.ts.Token()
	s.w.set(err)
	return t, err
}

// codeRejected is the JSON-RPC error the SDK's transport gives a request
// it did not send (jsonrpc2.ErrRejected).
const codeRejected = -32005

// authProblem is the Problem of a request the transport rejected after
// an authorization failure, or nil when that is not what happened.
func (b *Bridge) authProblem(err error) *envelope.Problem {
	var je *jsonrpc.Error
	w := b.auth.Load()
	if w == nil || !asJSONRPC(err, &je) || je.Code != codeRejected {
		return nil
	}
	aerr := w.failed()
	if aerr == nil {
		return nil
	}
	ns := b.cfg.Entry.Namespace
	// The transport did not send the request: the tool did not run.
	return envelope.Problemf(envelope.CodeUnauthorized, "MCP server %q: the bridge could not authorize the request: %s", ns, b.redact(aerr)).WithRan(envelope.RanNo).
		WithFix(fmt.Sprintf("As the worker's user, run `toolmesh login --config TOOLS_FILE %s`, then call again.", ns), envelope.HasPlaceholders)
}
