package authcallout

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/toolmesh/toolmesh/internal/identity"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

const aud = "nats://mesh.example"

// provider serves a discovery document and one key, and signs tokens.
func provider(t *testing.T) (*oauth.Validator, func(sub string) string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var url string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": url, "jwks_uri": url + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	url = srv.URL
	v, err := oauth.NewValidator(context.Background(), oauth.Config{Issuer: url, Audiences: []string{aud}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: "k"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, func(sub string) string {
		tok, err := josejwt.Signed(s).Claims(josejwt.Claims{Issuer: url, Subject: sub, Audience: josejwt.Audience{aud},
			Expiry: josejwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

// request is an authorization request as a server signs it.
func request(t *testing.T, server nkeys.KeyPair, userNkey, token string) []byte {
	t.Helper()
	spub, _ := server.PublicKey()
	rc := jwt.NewAuthorizationRequestClaims(userNkey)
	rc.Server = jwt.ServerID{ID: spub, Name: "s"}
	rc.UserNkey = userNkey
	rc.ConnectOptions.Token = token
	tok, err := rc.Encode(server)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(tok)
}

func TestHandleMintsThePolicysUser(t *testing.T) {
	v, sign := provider(t)
	pol, err := identity.ParsePolicy([]byte("people: [{match: {sub: alice}, account: ALICE, user: alice, namespaces: [alice]}]"))
	if err != nil {
		t.Fatal(err)
	}
	issuer, _ := nkeys.CreateAccount()
	xk, _ := nkeys.CreateCurveKeys()
	svc, err := New(Config{Validator: v, Policy: pol, Issuer: issuer, XKey: xk})
	if err != nil {
		t.Fatal(err)
	}
	server, _ := nkeys.CreateServer()
	user, _ := nkeys.CreateUser()
	upub, _ := user.PublicKey()
	ipub, _ := issuer.PublicKey()

	resp := decode(t, svc, request(t, server, upub, sign("alice")), "")
	uc, err := jwt.DecodeUserClaims(resp.Jwt)
	if err != nil || resp.Error != "" || resp.Issuer != ipub || uc.Issuer != ipub {
		t.Fatalf("alice: %+v, %v", resp, err)
	}
	if uc.Subject != upub || uc.Name != "alice" || uc.Audience != "ALICE" || uc.Expires == 0 ||
		!slices.Contains(uc.Pub.Allow, "toolmesh.call.alice.>") || slices.Contains(uc.Pub.Allow, "toolmesh.call.>") {
		t.Fatalf("alice's user JWT: %+v", uc)
	}

	// Encrypted both ways when the server uses an xkey.
	sx, _ := nkeys.CreateCurveKeys()
	sxpub, _ := sx.PublicKey()
	xpub, _ := xk.PublicKey()
	sealed, err := sx.Seal(request(t, server, upub, sign("alice")), xpub)
	if err != nil {
		t.Fatal(err)
	}
	out, err := svc.Handle(context.Background(), sealed, sxpub)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := sx.Open(out, xpub)
	if err != nil {
		t.Fatalf("the response is not sealed to the server: %v", err)
	}
	if rc, err := jwt.DecodeAuthorizationResponseClaims(string(plain)); err != nil || rc.Jwt == "" {
		t.Fatalf("encrypted answer: %+v, %v", rc, err)
	}

	for name, token := range map[string]string{"no token": "", "a forged token": sign("alice") + "x", "no rule": sign("eve")} {
		resp := decode(t, svc, request(t, server, upub, token), "")
		if resp.Jwt != "" || resp.Error == "" {
			t.Errorf("%s: %+v", name, resp)
		}
	}
}

func decode(t *testing.T, svc *Service, req []byte, xkey string) *jwt.AuthorizationResponseClaims {
	t.Helper()
	out, err := svc.Handle(context.Background(), req, xkey)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := jwt.DecodeAuthorizationResponseClaims(string(out))
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
