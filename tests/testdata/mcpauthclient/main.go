// Command mcpauthclient is the client the official MCP conformance
// suite's client auth/* scenarios drive (`conformance client --command
// mcpauthclient`): it reaches the suite's OAuth-protected server with the
// OAuth client the bridge uses (internal/oauth) and calls its tool.
//
// The suite runs it with the server URL as its last argument, the
// scenario in MCP_CONFORMANCE_SCENARIO, scenario data (a pre-registered
// client) in MCP_CONFORMANCE_CONTEXT and the revision in
// MCP_CONFORMANCE_PROTOCOL_VERSION. The client-credentials scenarios use
// the bridge's client-credentials client; the others its authorization
// code client (toolmesh login's): the person's browser is an HTTP client
// that follows the suite's authorization server, which approves at once,
// to the real loopback redirect. The grant is kept in a temporary file,
// as a worker keeps it; once the person's session has called the tool,
// a worker's client made from that file alone (no person) calls it again.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/internal/oauth"
)

// metadataURL is the client ID metadata document URL the suite's
// auth/basic-cimd scenario expects of a client (the document itself is
// never fetched there).
const metadataURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: mcpauthclient SERVER_URL")
	}
	server := os.Args[len(os.Args)-1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &sc); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	dir, err := os.MkdirTemp("", "mcpauthclient")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	grant := &oauth.GrantFile{Path: filepath.Join(dir, "grant.json")}
	h, done, err := handler(scenario, server, sc.ClientID, sc.ClientSecret, grant)
	if err != nil {
		log.Fatal(err)
	}
	defer done()
	if err := run(ctx, server, h); err != nil {
		log.Fatal(err)
	}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		return
	}
	worker, err := oauth.NewCodeFlowHandler(oauth.CodeFlow{Resource: server, File: grant, ClientID: sc.ClientID})
	if err != nil {
		log.Fatalf("the worker's client from the stored grant: %v", err)
	}
	if err := run(ctx, server, worker); err != nil {
		log.Fatalf("the worker's client from the stored grant: %v", err)
	}
}

// handler is the bridge's OAuth client for the scenario.
func handler(scenario, server, id, secret string, grant *oauth.GrantFile) (auth.OAuthHandler, func(), error) {
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		h, err := oauth.NewClientCredentialsHandler(id, secret, "")
		return h, func() {}, err
	}
	lb, err := oauth.ListenLoopback()
	if err != nil {
		return nil, nil, err
	}
	done := func() { _ = lb.Close() }
	h, err := oauth.NewCodeFlowHandler(oauth.CodeFlow{Resource: server, File: grant,
		ClientID: id, ClientSecret: secret, ClientMetadataURL: metadataURL,
		Authorize: lb.Fetcher(browse), RedirectURL: lb.RedirectURL()})
	return h, done, err
}

// browse is the person's browser: it opens the authorization URL and
// follows the redirects, the last one to the loopback receiver.
func browse(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("browser: %v", err)
	}
	return resp.Body.Close()
}

// run connects, lists the tools and calls test-tool.
func run(ctx context.Context, server string, h auth.OAuthHandler) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "toolmesh-bridge", Version: "0.1.0"}, nil)
	opts := &mcp.ClientSessionOptions{ProtocolVersion: os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")}
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: server, OAuthHandler: h}, opts)
	if err != nil {
		return fmt.Errorf("connect: %v", err)
	}
	defer sess.Close()
	if _, err := sess.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %v", err)
	}
	if _, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}}); err != nil {
		return fmt.Errorf("tools/call test-tool: %v", err)
	}
	return nil
}
