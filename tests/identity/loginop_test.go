package identity

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The person and the client of the login provider.
const (
	loginUser     = "test-user@127.0.0.1" // zitadel's example user at this issuer's host
	loginPassword = "verysecure"
	cliClientID   = "toolmesh-cli"
	cliSecret     = "cli-secret-0123456789abcdef"
)

// loginIDP is a real OpenID provider with a login page (zitadel/oidc's
// example OP: its op package and its username/password form), for the
// authorization code flow a person goes through in a browser. Its one
// client is a native app with a loopback redirect and a secret, whose
// JWT access tokens name the resource as audience and live shortly.
type loginIDP struct {
	srv    *httptest.Server
	issuer string
	store  *loginStorage
}

// startLoginIDP serves the provider; tokens it issues live for lifetime.
func startLoginIDP(t *testing.T, lifetime time.Duration) *loginIDP {
	t.Helper()
	p := &loginIDP{srv: httptest.NewUnstartedServer(nil)}
	p.issuer = "http://" + p.srv.Listener.Addr().String()
	p.store = &loginStorage{Storage: storage.NewStorageWithClients(storage.NewUserStore(p.issuer), map[string]*storage.Client{}),
		lifetime: lifetime}
	p.srv.Config.Handler = exampleop.SetupServer(p.issuer, p.store, nil, false)
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	return p
}

// loginStorage is the example storage with the CLI client, the resource
// as every token's audience (RFC 8707) and short-lived tokens; it counts
// refreshes and can revoke every grant given so far.
type loginStorage struct {
	*storage.Storage
	lifetime time.Duration

	mu        sync.Mutex
	resource  string
	refreshed int
	issued    map[string]bool // refresh tokens given out
	revoked   map[string]bool
}

func (s *loginStorage) setResource(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resource = uri
}

// refreshes is how many refresh grants the provider has honoured.
func (s *loginStorage) refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshed
}

// revokeAll revokes every grant given so far: their refresh tokens are
// refused from now on; a new login gets a new grant.
func (s *loginStorage) revokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = s.issued
	s.issued = map[string]bool{}
}

func (s *loginStorage) audience(aud []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(aud, s.resource)
}

func (s *loginStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if id == cliClientID {
		return cliClient{}, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

func (s *loginStorage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	if id == cliClientID {
		if secret != cliSecret {
			return errors.New("invalid secret")
		}
		return nil
	}
	return s.Storage.AuthorizeClientIDSecret(ctx, id, secret)
}

func (s *loginStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	return audAuthRequest{AuthRequest: r.(*storage.AuthRequest), aud: s.audience(r.GetAudience())}, nil
}

func (s *loginStorage) TokenRequestByRefreshToken(ctx context.Context, rt string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	revoked := s.revoked[rt]
	s.mu.Unlock()
	if revoked {
		return nil, errors.New("the grant was revoked")
	}
	r, err := s.Storage.TokenRequestByRefreshToken(ctx, rt)
	if err != nil {
		return nil, err
	}
	return audRefreshRequest{RefreshTokenRequest: r, aud: s.audience(r.GetAudience())}, nil
}

// CreateAccessAndRefreshTokens lets the example storage make the tokens
// of the request it knows, then shortens their life.
func (s *loginStorage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	switch r := req.(type) {
	case audAuthRequest:
		req = r.AuthRequest
	case audRefreshRequest:
		req = r.RefreshTokenRequest
	}
	id, rt, _, err := s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
	if err == nil {
		s.mu.Lock()
		if s.issued == nil {
			s.issued = map[string]bool{}
		}
		s.issued[rt] = true
		if current != "" {
			s.refreshed++
		}
		s.mu.Unlock()
	}
	return id, rt, time.Now().Add(s.lifetime), err
}

// audAuthRequest and audRefreshRequest add the resource to the audience.
type audAuthRequest struct {
	*storage.AuthRequest
	aud []string
}

func (r audAuthRequest) GetAudience() []string { return r.aud }

type audRefreshRequest struct {
	op.RefreshTokenRequest
	aud []string
}

func (r audRefreshRequest) GetAudience() []string { return r.aud }

// cliClient is toolmesh login's client: a native app (any loopback port,
// RFC 8252 §7.3) with a secret sent in the form, JWT access tokens.
type cliClient struct{}

func (cliClient) GetID() string                       { return cliClientID }
func (cliClient) RedirectURIs() []string              { return []string{"http://127.0.0.1/callback"} }
func (cliClient) PostLogoutRedirectURIs() []string    { return nil }
func (cliClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (cliClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodPost }
func (cliClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (cliClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}
func (cliClient) LoginURL(id string) string            { return "/login/username?authRequestID=" + id }
func (cliClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (cliClient) IDTokenLifetime() time.Duration       { return time.Hour }
func (cliClient) DevMode() bool                        { return false }
func (cliClient) IsScopeAllowed(string) bool           { return true }
func (cliClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (cliClient) ClockSkew() time.Duration             { return 0 }
func (cliClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (cliClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
