package bridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
)

func TestParseOAuthClient(t *testing.T) {
	t.Setenv("TOOLMESH_TEST_BRIDGE_SECRET", "from-the-environment")
	got, err := Parse([]byte(`tools: [{namespace: r, binding: {mcp: {url: "https://r.example/mcp", oauth: {client_id: c, client_secret_env: TOOLMESH_TEST_BRIDGE_SECRET}}}}]`))
	if err != nil || len(got) != 1 || got[0].Server.OAuth == nil || got[0].Server.OAuth.secret() != "from-the-environment" {
		t.Fatalf("%+v, %v", got, err)
	}
	for name, c := range map[string]struct{ yaml, err string }{
		"no url":                   {"{command: x, oauth: {client_id: c, client_secret: s}}", "oauth needs url"},
		"no client id":             {"{url: 'https://h', oauth: {client_secret: s}}", "client_id"},
		"two secrets":              {"{url: 'https://h', oauth: {client_id: c, client_secret: s, client_secret_env: V}}", "one of"},
		"unset variable":           {"{url: 'https://h', oauth: {client_id: c, client_secret_env: TOOLMESH_TEST_UNSET_SECRET}}", "empty or unset"},
		"static bearer":            {"{url: 'https://h', headers: {authorization: x}, oauth: {client_id: c, client_secret: s}}", "exclude each other"},
		"typo in a field":          {"{url: 'https://h', oauth: {client: c, client_secret: s}}", "client"},
		"login, two secrets":       {"{url: 'https://h', oauth: {login: true, client_id: c, client_secret: s, client_secret_env: V}}", "at most one"},
		"token file without login": {"{url: 'https://h', oauth: {client_id: c, client_secret: s, token_file: /t}}", "need login: true"},
		"scopes without login":     {"{url: 'https://h', oauth: {client_id: c, client_secret: s, scopes: [a]}}", "need login: true"},
		"metadata URL over http":   {"{url: 'https://h', oauth: {login: true, client_metadata_url: 'http://c.example/m.json'}}", "https URL with a path"},
		"metadata URL at a root":   {"{url: 'https://h', oauth: {login: true, client_metadata_url: 'https://c.example/'}}", "https URL with a path"},
	} {
		_, err := Parse([]byte("tools: [{namespace: r, binding: {mcp: " + c.yaml + "}}]"))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, c.err)
		}
	}
}

func TestParseLoginClient(t *testing.T) {
	for name, yaml := range map[string]string{
		"dynamic registration": "{url: 'https://h/mcp', oauth: {login: true}}",
		"public client":        "{url: 'https://h/mcp', oauth: {login: true, client_id: cli, token_file: /var/lib/tm/h.json}}",
		"confidential client":  "{url: 'https://h/mcp', oauth: {login: true, client_id: cli, client_secret: s}}",
		"metadata document":    "{url: 'https://h/mcp', oauth: {login: true, client_metadata_url: 'https://c.example/client.json'}}",
		"stepped-up scopes":    "{url: 'https://h/mcp', oauth: {login: true, scopes: ['mcp:write']}}",
	} {
		got, err := Parse([]byte("tools: [{namespace: r, binding: {mcp: " + yaml + "}}]"))
		if err != nil || len(got) != 1 || got[0].Server.OAuth == nil || !got[0].Server.OAuth.Login {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
}

func TestLoginRefusesABindingWithoutLogin(t *testing.T) {
	e := Entry{Namespace: "r", Server: ServerConfig{URL: "https://h/mcp", OAuth: &OAuthClient{ClientID: "c", ClientSecret: "s"}}}
	_, err := Login(context.Background(), e, func(context.Context, string) error { return nil })
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig || !strings.Contains(p.Detail, "login: true") {
		t.Fatalf("Login of a client-credentials binding = %v, want invalid_config", err)
	}
}

// A login to a server that never asks for authorization keeps nothing,
// and says so instead of claiming a login.
func TestLoginToAnOpenServerKeepsNothing(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	grant := filepath.Join(t.TempDir(), "g.json")
	e := Entry{Namespace: "open", Server: ServerConfig{URL: hs.URL, OAuth: &OAuthClient{Login: true, ClientID: "c", TokenFile: grant}}}
	_, err := Login(context.Background(), e, func(context.Context, string) error { return errors.New("no browser here") })
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig || !strings.Contains(p.Detail, "never asked") {
		t.Fatalf("Login to an open server = %v, want invalid_config", err)
	}
	if _, err := os.Stat(grant); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a grant file was written: %v", err)
	}
}
