package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

func TestGrantFileKeepsTheGrantPrivate(t *testing.T) {
	f := &GrantFile{Path: filepath.Join(t.TempDir(), "state", "oauth", "ns.json")}
	if _, err := f.Load(); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("Load before any login = %v, want ErrNoGrant", err)
	}
	g := &Grant{Resource: "http://r/mcp", ClientID: "c", ClientSecret: "client-secret-value", TokenURL: "http://as/token",
		Token: &oauth2.Token{AccessToken: "at", RefreshToken: "refresh-token-value"}}
	if err := f.Save(g); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{f.Path: 0o600, filepath.Dir(f.Path): 0o700} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}
	got, err := f.Load()
	if err != nil || got.Token.RefreshToken != "refresh-token-value" || got.ClientSecret != "client-secret-value" {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if err := os.Chmod(f.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("Load of a file others can read = %v, want a refusal", err)
	}
	if err := os.WriteFile(f.Path, []byte(`{"token": "refresh-token-value"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(); err == nil || strings.Contains(err.Error(), "refresh-token-value") {
		t.Fatalf("Load of a broken file = %v: want an error that does not quote the file", err)
	}
}

func TestDefaultGrantPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if p, err := DefaultGrantPath("remote"); err != nil || p != filepath.Join("/state", "toolmesh", "oauth", "remote.json") {
		t.Fatalf("DefaultGrantPath = %q, %v", p, err)
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if _, err := DefaultGrantPath(bad); err == nil {
			t.Errorf("DefaultGrantPath(%q) accepted", bad)
		}
	}
}

// tokenEndpoint is an authorization server's token endpoint answering
// every refresh with answer (a JSON body) and status.
func tokenEndpoint(t *testing.T, status int, answer string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "refresh_token" {
			http.Error(w, "want a refresh", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// expiredSource is a savingSource over an expired token of the grant.
func expiredSource(f *GrantFile, tokenURL string) *savingSource {
	g := Grant{Resource: "http://r/mcp", ClientID: "c", ClientSecret: "client-secret-value", TokenURL: tokenURL,
		AuthStyle: oauth2.AuthStyleInParams,
		Token:     &oauth2.Token{AccessToken: "old-access", RefreshToken: "refresh-token-one", Expiry: time.Now().Add(-time.Hour)}}
	return newSavingSource(&g, f, CodeFlow{}.grantSource)
}

func TestSavingSourceSavesTheRotatedRefreshToken(t *testing.T) {
	f := &GrantFile{Path: filepath.Join(t.TempDir(), "g.json")}
	s := expiredSource(f, tokenEndpoint(t, http.StatusOK, `{"access_token":"new-access","refresh_token":"refresh-token-two","token_type":"Bearer","expires_in":3600}`))
	tok, err := s.Token()
	if err != nil || tok.AccessToken != "new-access" {
		t.Fatalf("Token = %+v, %v", tok, err)
	}
	g, err := f.Load()
	if err != nil || g.Token.RefreshToken != "refresh-token-two" || g.ClientSecret != "client-secret-value" {
		t.Fatalf("the saved grant = %+v, %v: want the rotated refresh token", g, err)
	}
}

// A hostile authorization server echoes the refresh token and the client
// secret in its error: the error the bridge sees shows neither.
func TestSavingSourceErrorsHideTheGrant(t *testing.T) {
	f := &GrantFile{Path: filepath.Join(t.TempDir(), "g.json")}
	s := expiredSource(f, tokenEndpoint(t, http.StatusBadRequest,
		`{"error":"invalid_grant","error_description":"refresh-token-one of client-secret-value is revoked"}`))
	_, err := s.Token()
	if err == nil || !strings.Contains(err.Error(), "invalid_grant") || !strings.Contains(err.Error(), "toolmesh login") {
		t.Fatalf("Token = %v, want invalid_grant and what to do", err)
	}
	for _, secret := range []string{"refresh-token-one", "client-secret-value"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error shows %q: %v", secret, err)
		}
	}
}

func TestLoopbackTakesOnlyItsOwnState(t *testing.T) {
	lb, err := ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if !strings.HasPrefix(lb.RedirectURL(), "http://127.0.0.1:") || !strings.HasSuffix(lb.RedirectURL(), CallbackPath) {
		t.Fatalf("RedirectURL = %q, want a loopback IP literal", lb.RedirectURL())
	}
	visit := func(query string) {
		resp, err := http.Get(lb.RedirectURL() + "?" + query)
		if err != nil {
			t.Error(err)
			return
		}
		_ = resp.Body.Close()
	}
	// A stale tab's answer (another state) is skipped; the login's is taken.
	open := func(context.Context, string) error {
		visit("code=stale&state=other")
		visit("code=the-code&state=s1&iss=http%3A%2F%2Fas")
		return nil
	}
	res, err := lb.Fetcher(open)(context.Background(), &auth.AuthorizationArgs{URL: "http://as/authorize?state=s1"})
	if err != nil || res.Code != "the-code" || res.State != "s1" || res.Iss != "http://as" {
		t.Fatalf("Fetcher = %+v, %v", res, err)
	}
	refused := func(context.Context, string) error {
		visit("error=access_denied&error_description=the+person+said+no&state=s2")
		return nil
	}
	if _, err := lb.Fetcher(refused)(context.Background(), &auth.AuthorizationArgs{URL: "http://as/authorize?state=s2"}); err == nil ||
		!strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("a refused login = %v, want the server's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lb.Fetcher(func(context.Context, string) error { return nil })(ctx, &auth.AuthorizationArgs{URL: "http://as/a?state=s3"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a login given up = %v, want context.Canceled", err)
	}
}

func TestWorkerHandlerNeedsAStoredLoginForItsServer(t *testing.T) {
	f := &GrantFile{Path: filepath.Join(t.TempDir(), "g.json")}
	if _, err := NewCodeFlowHandler(CodeFlow{Resource: "http://r/mcp", File: f}); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("without a login: %v, want ErrLoginRequired", err)
	}
	g := &Grant{Resource: "http://other/mcp", ClientID: "c", TokenURL: "http://as/token", Token: &oauth2.Token{AccessToken: "a"}}
	if err := f.Save(g); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCodeFlowHandler(CodeFlow{Resource: "http://r/mcp", File: f}); !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("a login for another server: %v", err)
	}
	g.Resource = "http://r/mcp"
	if err := f.Save(g); err != nil {
		t.Fatal(err)
	}
	h, err := NewCodeFlowHandler(CodeFlow{Resource: "http://r/mcp", File: f})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h.TokenSource(context.Background())
	if err != nil || ts == nil {
		t.Fatalf("TokenSource = %v, %v", ts, err)
	}
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "a" {
		t.Fatalf("the stored token = %+v, %v", tok, err)
	}
	raw, _ := json.Marshal(g)
	if strings.Contains(string(raw), `"client_secret"`) {
		t.Fatalf("a public client's grant names a client_secret: %s", raw)
	}
}

// A refused refresh reads the file again: a login made since (toolmesh
// login while the worker runs) is taken up.
func TestSavingSourceTakesUpANewLogin(t *testing.T) {
	f := &GrantFile{Path: filepath.Join(t.TempDir(), "g.json")}
	url := tokenEndpoint(t, http.StatusBadRequest, `{"error":"invalid_grant"}`)
	s := expiredSource(f, url)
	if _, err := s.Token(); err == nil {
		t.Fatal("a refused refresh gave a token")
	}
	fresh := &Grant{Resource: "http://r/mcp", ClientID: "c", TokenURL: url,
		Token: &oauth2.Token{AccessToken: "after-login", RefreshToken: "refresh-token-new", Expiry: time.Now().Add(time.Hour)}}
	if err := f.Save(fresh); err != nil {
		t.Fatal(err)
	}
	if tok, err := s.Token(); err != nil || tok.AccessToken != "after-login" {
		t.Fatalf("after a new login: %+v, %v", tok, err)
	}
}

// A worker's handler answers a 401 for a token not yet expired by
// refreshing it; without a refresh token it needs a person.
func TestWorkerHandlerRefreshesOnA401(t *testing.T) {
	f := &GrantFile{Path: filepath.Join(t.TempDir(), "g.json")}
	url := tokenEndpoint(t, http.StatusOK, `{"access_token":"refreshed","refresh_token":"refresh-token-two","token_type":"Bearer","expires_in":3600}`)
	g := &Grant{Resource: "http://r/mcp", ClientID: "c", TokenURL: url, AuthStyle: oauth2.AuthStyleInParams,
		Token: &oauth2.Token{AccessToken: "refused", RefreshToken: "refresh-token-one", Expiry: time.Now().Add(time.Hour)}}
	if err := f.Save(g); err != nil {
		t.Fatal(err)
	}
	nowhere := httptest.NewServer(http.NotFoundHandler())
	defer nowhere.Close()
	unauthorized := func() (*http.Request, *http.Response) {
		req := httptest.NewRequest(http.MethodPost, nowhere.URL+"/mcp", nil)
		return req, &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody}
	}
	h, err := NewCodeFlowHandler(CodeFlow{Resource: "http://r/mcp", File: f})
	if err != nil {
		t.Fatal(err)
	}
	req, resp := unauthorized()
	if err := h.Authorize(context.Background(), req, resp); err != nil {
		t.Fatalf("Authorize on a 401 with a refresh token: %v", err)
	}
	ts, _ := h.TokenSource(context.Background())
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "refreshed" {
		t.Fatalf("the token after the 401: %+v, %v", tok, err)
	}
	g.Token.RefreshToken = ""
	if err := f.Save(g); err != nil {
		t.Fatal(err)
	}
	h, err = NewCodeFlowHandler(CodeFlow{Resource: "http://r/mcp", File: f})
	if err != nil {
		t.Fatal(err)
	}
	req, resp = unauthorized()
	if err := h.Authorize(context.Background(), req, resp); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Authorize on a 401 without a refresh token = %v, want ErrLoginRequired", err)
	}
}

// A worker's handler answering a 403 insufficient_scope says which scope
// the new login must give.
func TestWorkerHandlerNamesTheSteppedUpScope(t *testing.T) {
	f := &GrantFile{Path: filepath.Join(t.TempDir(), "g.json")}
	if err := f.Save(&Grant{Resource: "http://r/mcp", ClientID: "c", TokenURL: "http://as/token",
		Token: &oauth2.Token{AccessToken: "a", RefreshToken: "r", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	nowhere := httptest.NewServer(http.NotFoundHandler())
	defer nowhere.Close()
	h, err := NewCodeFlowHandler(CodeFlow{Resource: "http://r/mcp", File: f})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, nowhere.URL+"/mcp", nil)
	resp := &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody,
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="mcp:write"`}}}
	if err := h.Authorize(context.Background(), req, resp); !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), `"mcp:write"`) {
		t.Fatalf("Authorize on a 403 insufficient_scope = %v, want ErrLoginRequired naming mcp:write", err)
	}
}

// A grant printed or logged by mistake shows none of its secrets.
func TestGrantPrintsNoSecret(t *testing.T) {
	g := Grant{Resource: "http://r/mcp", ClientID: "c", ClientSecret: "client-secret-value", TokenURL: "http://as/token",
		Token: &oauth2.Token{AccessToken: "access-token-value", RefreshToken: "refresh-token-value"}}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("grant", "grant", g, "pointer", &g)
	out := fmt.Sprintf("%v %+v %#v %s %v", g, g, g, &g, []any{g}) + logged.String()
	for _, s := range []string{"client-secret-value", "access-token-value", "refresh-token-value"} {
		if strings.Contains(out, s) {
			t.Fatalf("a printed grant shows %q: %s", s, out)
		}
	}
	if !strings.Contains(out, "a refresh token") {
		t.Fatalf("a printed grant says nothing of itself: %s", out)
	}
}
