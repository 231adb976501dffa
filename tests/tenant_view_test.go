package tests

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// tenantMesh is deploy/secure with two worker pools: "demo" (demo.*, which
// alice and bob may call) and "fs" (user files: fs.*, which only bob may call).
func tenantMesh(t *testing.T) *secureMesh {
	t.Helper()
	m := startSecure(t)
	register(t, m.demoWorker(t, worker.Config{}), envelope.ToolSpec{Name: "demo.echo", Description: "Echo the message back"}, echo)
	fnc, _ := m.dial(t, "files")
	fw := meshtest.NewWorker(t, fnc, worker.Config{Pool: "fs"})
	for _, s := range []envelope.ToolSpec{
		{Name: "fs.read_file", Description: "Read the complete contents of a file from the file system.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{Name: "fs.write_file", Description: "Create a new file or overwrite an existing file."},
	} {
		register(t, fw, s, echo)
	}
	return m
}

// tenantCaller is a caller connected as user.
func (m *secureMesh) tenantCaller(t *testing.T, user string) (*caller.Caller, *nats.Conn) {
	t.Helper()
	nc, _ := m.dial(t, user)
	return meshtest.NewCaller(t, nc, caller.Config{Logger: meshtest.Quiet()}), nc
}

// catalogNames waits until c's catalogue holds want (the fleet's answers
// gathered; deploy/secure has no registry) and returns every name in it.
func catalogNames(t *testing.T, c *caller.Caller, want string) []string {
	t.Helper()
	var names []string
	waitFor(t, "the catalogue to hold "+want, func() bool {
		cat, err := c.Catalog().List(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, tl := range cat.Tools {
			names = append(names, tl.Spec.Name)
		}
		return slices.Contains(names, want)
	})
	return names
}

// searchNames is c's search for query: the hits' tool names, best first,
// and the hits.
func searchNames(ctx context.Context, t *testing.T, c *caller.Caller, query string) ([]string, []catalog.SearchHit) {
	t.Helper()
	hits, err := c.Catalog().Search(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hits {
		names = append(names, h.Tool.Spec.Name)
	}
	return names, hits
}

// noFS fails when any of names is a files-pool tool.
func noFS(t *testing.T, where string, names []string) {
	t.Helper()
	for _, n := range names {
		if strings.HasPrefix(n, "fs.") {
			t.Fatalf("alice's %s names %s, a tool her permissions refuse: %v", where, n, names)
		}
	}
}

// Under deploy/secure each tenant sees only the tools it may call: the
// server's publish permissions for the tenant's user are the one record
// of that. Bob (who may call fs.*) sees the files pool's tools; alice's
// catalogue, search, describe, Watch and MCP tools/list never name them,
// although the pool's answers do reach her connection (the control below).
func TestSecureTenantSeesOnlyItsTools(t *testing.T) {
	m := tenantMesh(t)
	ctx := context.Background()
	bob, _ := m.tenantCaller(t, "bob")
	if names := catalogNames(t, bob, "fs.read_file"); !slices.Contains(names, "demo.echo") {
		t.Fatalf("bob's catalogue = %v, want demo.* and fs.*", names)
	}
	alice, anc := m.tenantCaller(t, "alice")
	if raw := rawCatalog(t, anc); !strings.Contains(raw, "fs.read_file") {
		t.Fatalf("control: the files pool's catalogue answer did not reach alice's connection: %s", raw)
	}
	noFS(t, "catalogue", catalogNames(t, alice, "demo.echo"))

	hitNames, _ := searchNames(ctx, t, alice, "read a file")
	noFS(t, "search", hitNames)
	if bobHits, _ := bob.Catalog().Search(ctx, "read a file"); len(bobHits) == 0 || bobHits[0].Tool.Spec.Name != "fs.read_file" {
		t.Fatalf("control: bob's search for 'read a file' = %v, want fs.read_file first", bobHits)
	}

	if _, err := alice.Catalog().Describe(ctx, "fs.read_file"); err == nil {
		t.Fatal("alice described fs.read_file")
	} else if p := wantCode(t, err, envelope.CodeForbidden); strings.Contains(p.Detail, "Read the complete") {
		t.Fatalf("the refusal quotes the tool: %v", p)
	}
	if _, err := alice.Catalog().Describe(ctx, "demo.echo"); err != nil {
		t.Fatalf("alice may describe demo.echo: %v", err)
	}
	if _, err := bob.Catalog().Describe(ctx, "fs.read_file"); err != nil {
		t.Fatalf("control: bob may describe fs.read_file: %v", err)
	}
	noFS(t, "watch", watchSeedWithin(t, alice, "demo.echo", 30*time.Second))
	noFS(t, "MCP tools/list", gatewayTools(t, alice, "demo.echo"))
	if names := gatewayTools(t, bob, "fs.read_file"); !slices.Contains(names, "demo.echo") {
		t.Fatalf("control: bob's MCP tools/list = %v", names)
	}
}

// rawCatalog asks toolmesh.catalog directly on nc and returns every answer.
func rawCatalog(t *testing.T, nc *nats.Conn) string {
	t.Helper()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest("toolmesh.catalog", inbox, nil); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for range 2 { // the two workers
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("raw catalogue: %v (so far %s)", err, all.String())
		}
		all.Write(m.Data)
	}
	return all.String()
}

// gatewayTools serves c's mesh through an MCP gateway and lists it with
// the go-sdk client once want is listed.
func gatewayTools(t *testing.T, c *caller.Caller, want string) []string {
	t.Helper()
	g, err := gateway.New(gateway.Config{Caller: c, CatalogWait: 2 * time.Second, Logger: meshtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mc := connectInProcess(t, g, "")
	var names []string
	waitFor(t, "the gateway to list "+want, func() bool {
		if err := g.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		names = toolNamesOf(t, mc)
		return slices.Contains(names, want)
	})
	return names
}
