package tests

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// The reads that must reach no server: ".." segments, written plainly or
// percent-encoded, and URIs no server offers.
var (
	dotDotURIs  = []string{"file:///notes/../../etc/passwd", "file:///%2e%2e/etc/passwd", "file:///notes/%2E%2e/x", "file://../etc/passwd"}
	unownedURIs = []string{"https://example.com/secret", "test://static-text-nope"}
)

// serverReads is every URI a resources/read brought the -files server.
func serverReads(t *testing.T, c *caller.Caller, tool string) []string {
	t.Helper()
	resp, err := c.Call(context.Background(), tool, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Reads []string `json:"reads"`
	}
	b, _ := json.Marshal(resp.Data)
	if err := json.Unmarshal([]byte(structuredOf(b)), &got); err != nil {
		t.Fatal(err)
	}
	return got.Reads
}

// A bridged server with a catch-all template (file:///{+path}) is sent a
// read only of what it listed or its template matches after
// normalisation; ".." URIs are refused (invalid_input, ran "no") before
// it sees them, on the mesh and through the gateway, and a URI nobody
// offers is MCP's resource-not-found (SEP-2164) without reaching it.
func TestMCPResourceReadsGoOnlyWhereTheyBelong(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "files", Server: bridge.ServerConfig{Command: mcpServerBin(t), Args: []string{"-files"}}})
	bridgeOn(t, srv, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t)}})
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	read := func(uri string) (string, error) {
		resp, err := c.Call(context.Background(), "files._mcp.resources_read", map[string]string{"uri": uri})
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(resp.Data)
		return string(b), nil
	}
	for _, r := range []struct{ uri, want string }{ // in order: the server's log is checked in order below
		{"file:///notes/readme.txt", "contents of file:///notes/readme.txt"},
		{"FILE:///notes/%72eadme.txt", "contents of file:///notes/readme.txt"}, // the listed URI, however spelt
		{"file:///srv/%7Eshared.txt", "contents of file:///srv/~shared.txt"},   // the template's, in normal form
	} {
		uri, want := r.uri, r.want
		got, err := read(uri)
		if err != nil || !strings.Contains(got, want) {
			t.Fatalf("read %s on the mesh: %s, %v; want %q", uri, got, err, want)
		}
	}
	for _, uri := range append(slices.Clone(dotDotURIs), unownedURIs...) {
		_, err := read(uri)
		if p := wantCode(t, err, envelope.CodeInvalidInput); p.Ran() != envelope.RanNo {
			t.Fatalf("read %s: %v; want ran no", uri, p)
		}
	}
	cs := gatewayClient(t, srv, "", nil)
	if res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///notes/readme.txt"}); err != nil || len(res.Contents) != 1 {
		t.Fatalf("read through the gateway: %v, %v", res, err)
	}
	if res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil || !strings.Contains(res.Contents[0].Text, "static text resource") {
		t.Fatalf("read of the other server's resource through the gateway: %v, %v", res, err)
	}
	for _, uri := range append(slices.Clone(dotDotURIs), unownedURIs...) {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("read %s through the gateway: %v; want invalid params", uri, err)
		}
		if slices.Contains(unownedURIs, uri) && !strings.Contains(string(je.Data), `"uri":"`+uri+`"`) {
			t.Fatalf("read %s through the gateway: data %s; want the URI (SEP-2164)", uri, je.Data)
		}
	}
	got := serverReads(t, c, "files.reads")
	want := []string{"file:///notes/readme.txt", "file:///notes/readme.txt", "file:///srv/~shared.txt", "file:///notes/readme.txt"}
	if !slices.Equal(got, want) {
		t.Fatalf("the catch-all server was sent %q; want only %q", got, want)
	}
}
