package tests

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
)

// mcpArgs are the gateway flags the binary tests share with startGateway.
func mcpArgs(m *mcpMesh, extra ...string) []string {
	return append([]string{"mcp", "--server", m.srv.ClientURL(), "--deny", "secret.*",
		"--settle", "20ms", "--catalog-wait", "2s"}, extra...)
}

func TestMCPCommandStdio(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			m := startMCPMesh(t)
			cmd := exec.Command(toolmeshBin(t), mcpArgs(m)...)
			mc := connectMCP(t, &mcp.CommandTransport{Command: cmd}, v)
			if got := mc.cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			exerciseGateway(t, m, mc)
		})
	}
}

func TestMCPCommandHTTP(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			// A mesh of its own: the list_changed check kills a worker,
			// which the registry remembers until its TTL, and the catalogue
			// then honestly says it is incomplete.
			m := startMCPMesh(t)
			p := startProc(t, mcpArgs(m, "--http", "127.0.0.1:0")...)
			url := p.waitLine(t, regexp.MustCompile(`serving MCP on (http://\S+)`))[1]
			mc := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: url}, v)
			if got := mc.cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			exerciseGateway(t, m, mc)
			_ = mc.cs.Close()
			if code := p.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("graceful shutdown exited %d\n%s", code, p.stderr.String())
			}
		})
	}
}

func TestMCPCommandRefusesUnsafeHTTP(t *testing.T) {
	invalidConfig := envelope.NewProblem(envelope.CodeInvalidConfig, "").ExitCode
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "without a bearer"},
		{[]string{"--http", "no-port"}, "want host:port"},
		{[]string{"--http", "127.0.0.1:0", "--bearer-env", "TOOLMESH_TEST_SURELY_UNSET"}, "empty or unset"},
	}
	for _, c := range cases {
		r := runCmd(t, "", append([]string{"mcp", "--format", "json"}, c.args...)...)
		if r.code != invalidConfig || !strings.Contains(r.stderr, c.want) {
			t.Errorf("mcp %v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, invalidConfig, c.want)
		}
	}
}
