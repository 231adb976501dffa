package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
)

// tenantGateway serves c's view of the mesh through an MCP gateway and
// connects a go-sdk client to it.
func tenantGateway(t *testing.T, c *caller.Caller) *mcp.ClientSession {
	t.Helper()
	g := runGateway(t, gateway.Config{Caller: c})
	return inMemorySession(t, g.Server(), nil, "2025-11-25")
}

// Under deploy/secure as shipped, `toolmesh worker --pool fs` bridges an
// MCP server as the files pool's user: the bridge's worker subscribes the
// pool's control subjects, so it serves instead of exiting 78. Its tools
// and its resources (the fs._mcp.* surface tools) are callable by bob,
// whose permissions allow fs.*, and by no one else: alice is refused on
// the mesh and her MCP gateway neither lists nor reads them.
func TestSecureBridgeRunsInAPool(t *testing.T) {
	m := startSecure(t)
	tools := filepath.Join(t.TempDir(), "bridge.yaml")
	yaml := fmt.Sprintf("tools:\n  - namespace: fs\n    binding:\n      mcp: {command: %q, args: [-files]}\n", mcpServerBin(t))
	if err := os.WriteFile(tools, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startProc(t, "worker", "--config", tools, "--pool", "fs", "--server", m.srv.ClientURL(),
		"--user", "files", "--password", m.passwords["files"])
	w.waitLine(t, regexp.MustCompile(`bridges ready`))

	ctx := context.Background()
	readme := map[string]string{"uri": "file:///notes/readme.txt"}
	bob, _ := m.tenantCaller(t, "bob")
	if got, p := callBridged(t, bob, "fs.echo", map[string]string{"message": "hi"}); p != nil || got != `{"message":"hi"}` {
		t.Fatalf("bob's call of the bridged fs.echo: %s %v", got, p)
	}
	if resp, err := bob.Call(ctx, "fs._mcp.resources_read", readme); err != nil || !strings.Contains(string(mustJSON(resp.Data)), "contents of file:///notes/readme.txt") {
		t.Fatalf("bob's read of the bridged server's resource: %v %v", resp, err)
	}
	alice, _ := m.tenantCaller(t, "alice")
	for _, tool := range []string{"fs._mcp.resources_read", "fs._mcp.resources_list", "fs.echo"} {
		_, err := alice.Call(ctx, tool, readme)
		wantCode(t, err, envelope.CodeForbidden)
	}

	bcs := tenantGateway(t, bob)
	waitFor(t, "bob's gateway to read the bridged resource", func() bool {
		res, err := bcs.ReadResource(ctx, &mcp.ReadResourceParams{URI: readme["uri"]})
		return err == nil && len(res.Contents) == 1 && strings.Contains(res.Contents[0].Text, "contents of")
	})
	acs := tenantGateway(t, alice)
	if res, err := acs.ListResources(ctx, nil); err != nil || len(res.Resources) != 0 {
		t.Fatalf("alice's gateway lists the files pool's resources: %v %v", res, err)
	}
	_, err := acs.ReadResource(ctx, &mcp.ReadResourceParams{URI: readme["uri"]})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || strings.Contains(err.Error(), "contents of") {
		t.Fatalf("alice's gateway read the files pool's resource: %v", err)
	}
	if got := serverReads(t, bob, "fs.reads"); !slices.Equal(got, []string{readme["uri"], readme["uri"]}) {
		t.Fatalf("the bridged server was sent reads %q; want bob's two only", got)
	}
	if code := w.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("the pooled bridge exited %d on SIGTERM", code)
	}
}
