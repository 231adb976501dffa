package identity

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/internal/oauth"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// protectedServer is a remote MCP server that requires OAuth: tokens of
// issuer for its own URL, with no clock leeway, so an expired token is
// refused at once.
func protectedServer(t *testing.T, issuer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uri := "http://" + ln.Addr().String() + "/mcp"
	v, err := oauth.NewValidator(context.Background(), oauth.Config{Issuer: issuer, Audiences: []string{uri}, Leeway: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	res := &oauth.Resource{Validator: v, URI: uri}
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello", Description: "Say hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello from the protected server"}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle(res.MetadataPath(), res.MetadataHandler())
	mux.Handle("/mcp", res.Require(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	hs.Start()
	t.Cleanup(hs.Close)
	return uri
}

// The bridge hosts a remote MCP server that requires OAuth: it gets a
// token by the client-credentials grant from the authorization server the
// server's metadata names, and a new one once it expires.
func TestBridgeReachesAnOAuthServerWithClientCredentials(t *testing.T) {
	p := startIDP(t, "")
	uri := protectedServer(t, p.issuer)
	// The token lives 9s: within oauth2's 10s expiry margin, so the
	// bridge's token source takes every token as about to expire and gets
	// a fresh one for each request.
	p.store.people["bridge"] = principal{id: "bridge", audience: []string{uri}, lifetime: 9 * time.Second}
	if resp := post(t, strings.TrimPrefix(strings.TrimSuffix(uri, "/mcp"), "http://"), ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the remote server without a token: %s", resp.Status)
	}
	m := meshtest.NewWith(t, meshtest.Config{Server: embedded.Config{Listen: "127.0.0.1:0"}})
	tools := filepath.Join(t.TempDir(), "bridge.yaml")
	t.Setenv("TOOLMESH_TEST_BRIDGE_SECRET", secret)
	if err := os.WriteFile(tools, []byte(`tools:
  - namespace: remote
    binding:
      mcp: {url: "`+uri+`", oauth: {client_id: bridge, client_secret_env: TOOLMESH_TEST_BRIDGE_SECRET, issuer: "`+p.issuer+`"}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	runUntilSaid(t, "bridges ready", toolmeshBin, "worker", "--config", tools, "--server", m.Server.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitForHello(ctx, t, m)
	before := p.store.tokensIssued("bridge")
	for range 2 {
		hello(ctx, t, m)
	}
	if before == 0 || p.store.tokensIssued("bridge") <= before {
		t.Fatalf("tokens issued to the bridge: %d before the calls, %d after: no refresh", before, p.store.tokensIssued("bridge"))
	}
}
