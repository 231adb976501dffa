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
	t.Parallel()
	gatewayPerVersion(t, func(t *testing.T, m *mcpMesh, v string) *mcpClient {
		return connectMCP(t, &mcp.CommandTransport{Command: exec.Command(toolmeshBin(t), mcpArgs(m)...)}, v)
	})
}

func TestMCPCommandHTTP(t *testing.T) {
	t.Parallel()
	gatewayPerVersion(t, func(t *testing.T, m *mcpMesh, v string) *mcpClient {
		p := startProc(t, mcpArgs(m, "--http", "127.0.0.1:0")...)
		url := p.waitLine(t, regexp.MustCompile(`serving MCP on (http://\S+)`))[1]
		mc := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: url}, v)
		// Once the checks ran (cleanups run last first): the client
		// leaves, and the command then shuts down gracefully.
		t.Cleanup(func() {
			_ = mc.cs.Close()
			if code := p.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("graceful shutdown exited %d\n%s", code, p.stderr.String())
			}
		})
		return mc
	})
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
