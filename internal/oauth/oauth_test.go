package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// issuer is a minimal provider: a discovery document and a JWKS that a
// test can rotate. The real OpenID provider runs in tests/identity.
type issuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey // public
	fetches atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: is.keys})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// signer makes a key, publishes it when publish is set, and returns a
// signer for it.
func (is *issuer) signer(t *testing.T, kid string, publish bool) jose.Signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if publish {
		is.mu.Lock()
		is.keys = append(is.keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
		is.mu.Unlock()
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sign(t *testing.T, s jose.Signer, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	tok, err := jwt.Signed(s).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const aud = "https://mcp.example.com/mcp"

func (is *issuer) claims(d time.Duration) jwt.Claims {
	now := time.Now()
	return jwt.Claims{Issuer: is.srv.URL, Subject: "alice", Audience: jwt.Audience{aud},
		Expiry: jwt.NewNumericDate(now.Add(d)), IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute))}
}

func TestValidateAcceptsAndRefuses(t *testing.T) {
	is := newIssuer(t)
	good := is.signer(t, "k1", true)
	foreign := is.signer(t, "k1", false) // same kid, key the issuer never published
	v, err := NewValidator(context.Background(), Config{Issuer: is.srv.URL, Audiences: []string{aud}, Leeway: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Validate(context.Background(), sign(t, good, is.claims(time.Hour), map[string]any{"scope": "mcp:tools email"}))
	if err != nil || id.Subject != "alice" || strings.Join(id.Scopes, ",") != "mcp:tools,email" {
		t.Fatalf("a valid token: %+v, %v", id, err)
	}
	wrongAud := is.claims(time.Hour)
	wrongAud.Audience = jwt.Audience{"https://other.example.com/mcp"}
	notYet := is.claims(time.Hour)
	notYet.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Hour))
	otherIss := is.claims(time.Hour)
	otherIss.Issuer = "https://evil.example.com"
	noExp := is.claims(time.Hour)
	noExp.Expiry = nil
	for name, tok := range map[string]string{
		"wrong audience": sign(t, good, wrongAud, nil),
		"expired":        sign(t, good, is.claims(-time.Hour), nil),
		"not yet valid":  sign(t, good, notYet, nil),
		"other issuer":   sign(t, good, otherIss, nil),
		"no exp":         sign(t, good, noExp, nil),
		"foreign key":    sign(t, foreign, is.claims(time.Hour), nil),
		"alg none":       unsigned(t, is.claims(time.Hour)),
		"garbage":        "not.a.jwt",
	} {
		if _, err := v.Validate(context.Background(), tok); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: want ErrInvalidToken, got %v", name, err)
		}
	}
}

// unsigned is a token with alg "none": never accepted.
func unsigned(t *testing.T, c jwt.Claims) string {
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","kid":"k1"}`)) + "." + enc(b) + "."
}

// An HS256 token whose secret is the published public key (the classic
// algorithm-confusion attack) is refused: only the JWKS keys' algorithms
// are accepted.
func TestValidateRefusesHMACConfusion(t *testing.T) {
	is := newIssuer(t)
	is.signer(t, "k1", true)
	v, err := NewValidator(context.Background(), Config{Issuer: is.srv.URL, Audiences: []string{aud}})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := json.Marshal(is.keys[0])
	if err != nil {
		t.Fatal(err)
	}
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pub}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(context.Background(), sign(t, hs, is.claims(time.Hour), nil)); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("HS256 with the public key as secret: %v", err)
	}
}

// A key published after the validator started (a rotation) is fetched on
// first sight of its key id; unknown key ids fetch at most once per
// RefetchEvery.
func TestValidateFollowsKeyRotation(t *testing.T) {
	is := newIssuer(t)
	is.signer(t, "k1", true)
	v, err := NewValidator(context.Background(), Config{Issuer: is.srv.URL, Audiences: []string{aud}, RefetchEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	rotated := is.signer(t, "k2", true)
	if _, err := v.Validate(context.Background(), sign(t, rotated, is.claims(time.Hour), nil)); err != nil {
		t.Fatalf("a token of the rotated key: %v", err)
	}
	slow, err := NewValidator(context.Background(), Config{Issuer: is.srv.URL, Audiences: []string{aud}, RefetchEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	before := is.fetches.Load()
	for i := range 5 {
		unknown := is.signer(t, "unknown"+string(rune('a'+i)), false)
		if _, err := slow.Validate(context.Background(), sign(t, unknown, is.claims(time.Hour), nil)); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if got := is.fetches.Load() - before; got != 0 {
		t.Fatalf("unknown key ids fetched the JWKS %d times within RefetchEvery of the last fetch", got)
	}
}

func TestValidatorRefusesDiscoveryOfAnotherIssuer(t *testing.T) {
	is := newIssuer(t)
	_, err := NewValidator(context.Background(), Config{Issuer: is.srv.URL + "/other", Audiences: []string{aud}})
	if err == nil {
		t.Fatal("a discovery document for another issuer was accepted")
	}
}

func TestResourceChallengesAndMetadata(t *testing.T) {
	is := newIssuer(t)
	s := is.signer(t, "k1", true)
	v, err := NewValidator(context.Background(), Config{Issuer: is.srv.URL, Audiences: []string{aud}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Resource{Validator: v, URI: aud, Scopes: []string{"mcp:tools"}}
	if got, want := r.MetadataURL(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"; got != want {
		t.Fatalf("metadata URL %s, want %s", got, want)
	}
	var seen *Identity
	var authz string
	h := r.Require(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		seen, _ = IdentityFrom(req.Context())
		authz = req.Header.Get("Authorization")
	}))
	do := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := do("")
	if rec.Code != 401 || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `resource_metadata="`+r.MetadataURL()+`"`) {
		t.Fatalf("no token: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	rec = do(sign(t, s, is.claims(time.Hour), map[string]any{"scope": "email"}))
	if wa := rec.Header().Get("WWW-Authenticate"); rec.Code != 403 || !strings.Contains(wa, `error="insufficient_scope"`) || !strings.Contains(wa, `scope="mcp:tools"`) {
		t.Fatalf("missing scope: %d %q", rec.Code, wa)
	}
	rec = do(sign(t, s, is.claims(time.Hour), map[string]any{"scope": "mcp:tools"}))
	if rec.Code != 200 || seen == nil || seen.Subject != "alice" || authz != "" {
		t.Fatalf("valid token: %d, identity %+v, Authorization passed on %q", rec.Code, seen, authz)
	}
	mrec := httptest.NewRecorder()
	r.MetadataHandler().ServeHTTP(mrec, httptest.NewRequest(http.MethodGet, r.MetadataPath(), nil))
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(mrec.Body.Bytes(), &doc); err != nil || doc.Resource != aud || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != is.srv.URL {
		t.Fatalf("metadata %s (%v)", mrec.Body, err)
	}
}
