package identity

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// principal is one client of the test provider. Tokens are obtained with
// the client-credentials grant, the token's subject being the client's
// id: the simplest real OAuth flow that needs no browser. Its fields
// shape the tokens the real provider signs (lifetime < 0: already
// expired; skew < 0: issued in the future, so not yet valid).
type principal struct {
	id       string
	audience []string
	lifetime time.Duration
	skew     time.Duration
	claims   map[string]any
}

const secret = "s3cret"

// idp is a real OpenID provider (zitadel/oidc's op package, OpenID
// certified) on an httptest server, issuing JWT access tokens.
type idp struct {
	srv    *httptest.Server
	issuer string
	store  *idpStorage
}

// startIDP serves a provider whose clients are people. issuer, when not
// empty, is the issuer the provider states instead of its own URL (a
// foreign provider signing in another's name).
func startIDP(t *testing.T, issuer string, people ...principal) *idp {
	t.Helper()
	p := &idp{}
	p.srv = httptest.NewUnstartedServer(nil)
	p.issuer = issuer
	if p.issuer == "" {
		p.issuer = "http://" + p.srv.Listener.Addr().String()
	}
	st := &idpStorage{Storage: storage.NewStorageWithClients(storage.NewUserStore(p.issuer), map[string]*storage.Client{}),
		people: map[string]principal{}, issued: map[string]int{}}
	for _, pr := range people {
		st.people[pr.id] = pr
	}
	p.store = st
	prov, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256([]byte("identity test")), CodeMethodS256: true,
		AuthMethodPost: true}, st, op.StaticIssuer(p.issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	p.srv.Config.Handler = prov
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	return p
}

// token gets an access token for id from the provider's token endpoint.
func (p *idp) token(t *testing.T, id string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"openid"}}
	resp, err := http.PostForm(p.srv.URL+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr oidc.AccessTokenResponse
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || resp.StatusCode != http.StatusOK || strings.Count(tr.AccessToken, ".") != 2 {
		t.Fatalf("token for %s: %s %+v (%v)", id, resp.Status, tr, err)
	}
	return tr.AccessToken
}

// idpStorage is the example in-memory storage of zitadel/oidc with the
// test's people as client-credentials clients that get JWT access tokens.
type idpStorage struct {
	*storage.Storage
	people map[string]principal

	mu     sync.Mutex
	issued map[string]int // access tokens issued per client
}

// tokensIssued is how many access tokens id has been issued.
func (s *idpStorage) tokensIssued(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued[id]
}

func (s *idpStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if pr, ok := s.people[id]; ok {
		return idpClient{pr}, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

func (s *idpStorage) ClientCredentials(_ context.Context, id, sec string) (op.Client, error) {
	if pr, ok := s.people[id]; ok && sec == secret {
		return idpClient{pr}, nil
	}
	return nil, errors.New("wrong client or secret")
}

func (s *idpStorage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	pr, ok := s.people[id]
	if !ok {
		return nil, errors.New("unknown client")
	}
	return tokenRequest{pr: pr, scopes: scopes}, nil
}

func (s *idpStorage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	if tr, ok := req.(tokenRequest); ok {
		s.mu.Lock()
		s.issued[tr.pr.id]++
		s.mu.Unlock()
		life := tr.pr.lifetime
		if life == 0 {
			life = time.Hour
		}
		return "at-" + tr.pr.id + "-" + time.Now().Format(time.RFC3339Nano), time.Now().Add(life), nil
	}
	return s.Storage.CreateAccessToken(ctx, req)
}

func (s *idpStorage) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	if pr, ok := s.people[clientID]; ok {
		return pr.claims, nil
	}
	return s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
}

type tokenRequest struct {
	pr     principal
	scopes []string
}

func (r tokenRequest) GetSubject() string    { return r.pr.id }
func (r tokenRequest) GetAudience() []string { return r.pr.audience }
func (r tokenRequest) GetScopes() []string   { return r.scopes }

// idpClient is a person as a confidential client with JWT access tokens.
type idpClient struct{ pr principal }

func (c idpClient) GetID() string                       { return c.pr.id }
func (c idpClient) RedirectURIs() []string              { return nil }
func (c idpClient) PostLogoutRedirectURIs() []string    { return nil }
func (c idpClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c idpClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodPost }
func (c idpClient) ResponseTypes() []oidc.ResponseType  { return nil }
func (c idpClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (c idpClient) LoginURL(string) string               { return "" }
func (c idpClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c idpClient) IDTokenLifetime() time.Duration       { return time.Hour }
func (c idpClient) DevMode() bool                        { return true }
func (c idpClient) IsScopeAllowed(string) bool           { return true }
func (c idpClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c idpClient) ClockSkew() time.Duration             { return c.pr.skew }
func (c idpClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c idpClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
