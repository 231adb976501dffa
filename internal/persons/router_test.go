package persons

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/internal/oauth"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// initialize posts an MCP initialize as sub.
func initialize(r http.Handler, sub string) int {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	id := &oauth.Identity{Issuer: "https://idp", Subject: sub, Expiry: time.Now().Add(time.Hour)}
	req = req.WithContext(oauth.WithIdentity(req.Context(), id, "token-of-"+sub))
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec.Code
}

// Each person gets a connection of their own, dialled with their token;
// past Max the one idle longest is disconnected; a refusal is 403.
func TestRouterConnectsEachPersonBounded(t *testing.T) {
	s := meshtest.StartServer(t, embedded.Config{InProcessOnly: true})
	var mu sync.Mutex
	conns := map[string]*nats.Conn{}
	dial := func(_ context.Context, token func() string) (*nats.Conn, error) {
		if token() == "token-of-eve" {
			return nil, nats.ErrAuthorization
		}
		nc, err := s.Connect()
		mu.Lock()
		conns[token()] = nc
		mu.Unlock()
		return nc, err
	}
	r := New(context.Background(), Config{Dial: dial, Max: 1})
	defer r.Close()
	if code := initialize(r, "alice"); code != http.StatusOK {
		t.Fatalf("alice: %d", code)
	}
	if code := initialize(r, "alice"); code != http.StatusOK || len(conns) != 1 {
		t.Fatalf("alice again: %d, %d connections", code, len(conns))
	}
	if code := initialize(r, "bob"); code != http.StatusOK {
		t.Fatalf("bob: %d", code)
	}
	testutil.WaitFor(t, "alice's connection to close past Max", func() bool { return conns["token-of-alice"].IsClosed() })
	if r.People() != 1 || conns["token-of-bob"].IsClosed() {
		t.Fatalf("%d people connected, bob's closed: %v", r.People(), conns["token-of-bob"].IsClosed())
	}
	if code := initialize(r, "eve"); code != http.StatusForbidden {
		t.Fatalf("eve, whom the mesh refuses: %d, want 403", code)
	}
}
