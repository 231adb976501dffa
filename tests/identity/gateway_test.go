package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// toolmeshBin is the toolmesh binary TestMain built from this checkout.
var toolmeshBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolmesh-identity")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	toolmeshBin = filepath.Join(dir, "toolmesh")
	build := exec.Command("go", "build", "-o", toolmeshBin, "./cmd/toolmesh")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/toolmesh: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// startGateway runs `toolmesh mcp --http 127.0.0.1:0 args...` and returns
// the address it serves on.
func startGateway(t *testing.T, args ...string) string {
	t.Helper()
	addr := runUntilSaid(t, "serving MCP on http://", toolmeshBin, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...)...)
	return strings.TrimSuffix(addr, "/mcp")
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP is an MCP client session on the gateway with token.
func connectMCP(ctx context.Context, addr, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "identity-test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
}

// post sends an MCP initialize with the given Authorization header.
func post(t *testing.T, addr, authz string) *http.Response {
	t.Helper()
	return postRPC(t, addr, authz, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
}

// postRPC sends one JSON-RPC message with the given Authorization header
// and header name/value pairs.
func postRPC(t *testing.T, addr, authz, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

const audience = "https://mcp.test.example/mcp"

// The gateway is an OAuth resource server for a real OpenID provider:
// without a token 401 naming its RFC 9728 metadata, which names the
// issuer; a valid token for its audience lists and calls tools; tokens
// for another audience, expired, not yet valid or signed by a key the
// issuer never published get 401.
func TestGatewayResourceServer(t *testing.T) {
	p := startIDP(t, "",
		principal{id: "alice", audience: []string{audience}},
		principal{id: "bob", audience: []string{audience}},
		principal{id: "mallory", audience: []string{"https://other.example/mcp"}},
		principal{id: "late", audience: []string{audience}, lifetime: -time.Hour},
		principal{id: "early", audience: []string{audience}, skew: -2 * time.Hour, lifetime: 3 * time.Hour})
	// Same issuer name, its own signing key: a token the issuer never signed.
	foreign := startIDP(t, p.issuer, principal{id: "alice", audience: []string{audience}})
	m := meshtest.NewWith(t, meshtest.Config{Server: embedded.Config{Listen: "127.0.0.1:0"}})
	if err := m.Worker.Register(envelope.ToolSpec{Name: "echo", Description: "Echo the arguments back"},
		worker.HandlerFunc(echo)); err != nil {
		t.Fatal(err)
	}
	addr := startGateway(t, "--server", m.Server.ClientURL(), "--auth-issuer", p.issuer, "--auth-audience", audience)

	resp := post(t, addr, "")
	wantMeta := `resource_metadata="https://mcp.test.example/.well-known/oauth-protected-resource/mcp"`
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), wantMeta) {
		t.Fatalf("without a token: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	checkMetadata(t, addr, p.issuer)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := connectMCP(ctx, addr, p.token(t, "alice"))
	if err != nil {
		t.Fatalf("a valid token: %v", err)
	}
	defer cs.Close()
	lr, err := cs.ListTools(ctx, nil)
	if err != nil || len(lr.Tools) != 1 || lr.Tools[0].Name != "echo" {
		t.Fatalf("tools/list with a valid token: %+v, %v", lr, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call with a valid token: %+v, %v", res, err)
	}

	// A 2025-11-25 session belongs to its person: bob's valid token
	// cannot use alice's.
	init := post(t, addr, "Bearer "+p.token(t, "alice"))
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("alice's initialize: %s, session %q", init.Status, sid)
	}
	hijack := postRPC(t, addr, "Bearer "+p.token(t, "bob"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")
	if body, _ := io.ReadAll(hijack.Body); hijack.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "session user mismatch") {
		t.Fatalf("bob with alice's session: %s %s", hijack.Status, body)
	}

	// Each is refused for its own reason, which the body says.
	for _, c := range []struct{ name, token, reason string }{
		{"another audience", p.token(t, "mallory"), "invalid audience"},
		{"expired", p.token(t, "late"), "expired"},
		{"not yet valid", p.token(t, "early"), "not valid yet"},
		{"foreign key", foreign.token(t, "alice"), "which the issuer does not publish"},
	} {
		resp := post(t, addr, "Bearer "+c.token)
		body, _ := io.ReadAll(resp.Body)
		if wa := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized ||
			!strings.Contains(wa, wantMeta) || !strings.Contains(wa, `error="invalid_token"`) || !strings.Contains(string(body), c.reason) {
			t.Errorf("%s: %s, WWW-Authenticate %q, body %q", c.name, resp.Status, wa, body)
		}
	}
}

// checkMetadata reads the protected-resource document at both places
// RFC 9728 clients look and wants it to name the resource and issuer.
func checkMetadata(t *testing.T, addr, issuer string) {
	t.Helper()
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		_ = resp.Body.Close()
		if err != nil || doc.Resource != audience || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != issuer {
			t.Fatalf("%s: %+v (%v)", path, doc, err)
		}
	}
}

// echo returns its arguments.
func echo(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	return req.Args, nil
}
