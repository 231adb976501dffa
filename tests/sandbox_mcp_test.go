package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// npmFilesystem is the reference filesystem server, pinned.
const npmFilesystem = "@modelcontextprotocol/server-filesystem@2026.8.31"

// The reference filesystem server, told it may serve dir and /etc, runs
// bridged under a sandbox that grants it only dir (and node's own
// OpenSSL configuration): it reads dir, and /etc/hostname — a path it
// would itself allow — is out of its view, and its attempt to look there
// is refused by the kernel with sandbox_read_denied.
func TestMCPInteropSandboxedFilesystem(t *testing.T) {
	if os.Getenv("TOOLMESH_INTEROP_MCP") == "" {
		t.Skip("set TOOLMESH_INTEROP_MCP=1 (make interop-mcp) to run the npm interop tests")
	}
	pkgs, data := testutil.OpenDir(t, "sandbox-test"), testutil.OpenDir(t, "sandbox-test")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"init", "-y"}, {"install", "--no-audit", "--no-fund", "--loglevel=error", npmFilesystem}} {
		cmd := exec.CommandContext(ctx, "npm", args...)
		cmd.Dir = pkgs
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "a.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	support := sandbox.ProbeHelpers(ctx, []string{filepath.Join(sandboxBins(t), sandbox.HelperName)})
	modules := filepath.Join(pkgs, "node_modules")
	entry := bridge.Entry{Namespace: "fs", InheritEnv: []string{"PATH", "HOME"},
		Server:  bridge.ServerConfig{Command: "node", Args: []string{filepath.Join(modules, "@modelcontextprotocol/server-filesystem/dist/index.js"), data, "/etc"}},
		Sandbox: &sandbox.Policy{Read: []string{modules, "/etc/ssl/openssl.cnf"}, Write: []string{data}}}
	srv := meshtest.StartServer(t, embedded.Config{})
	b, err := bridge.Start(ctx, meshtest.Connect(t, srv), bridge.Config{Entry: entry, Sandbox: &support,
		Worker: worker.Config{Logger: meshtest.Quiet()}, Logger: meshtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Drain(context.Background()) })
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	spec, err := c.Catalog().Describe(ctx, "fs.read_text_file")
	if err != nil || spec.Sandbox == nil || !spec.Sandbox.Confined || spec.Sandbox.Network != "none" {
		t.Fatalf("spec %+v: %v", spec.Sandbox, err)
	}
	allowed, p := callBridged(t, c, "fs.list_allowed_directories", map[string]any{})
	if p != nil || !strings.Contains(allowed, "/etc") {
		t.Fatalf("the server should think it may serve /etc: %s %v", allowed, p)
	}
	if out, p := callBridged(t, c, "fs.read_text_file", map[string]any{"path": filepath.Join(data, "a.txt")}); p != nil || !strings.Contains(out, "inside") {
		t.Fatalf("a granted read: %s %v", out, p)
	}
	// /etc/hostname is not in the program's view at all; the refusal the
	// kernel gives is for that path or the directory the server then
	// looks in (server-filesystem scans /etc when the file is missing).
	out, p := callBridged(t, c, "fs.read_text_file", map[string]any{"path": "/etc/hostname"})
	if p == nil || p.Code != envelope.CodeSandboxReadDenied {
		t.Fatalf("reading /etc/hostname: %s %+v", out, p)
	}
	if path, _ := p.Extensions["path"].(string); path != "/etc/hostname" && path != "/etc" {
		t.Fatalf("reading /etc/hostname was refused for %q, want the file or its directory: %+v", path, p)
	}
}
