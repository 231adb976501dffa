package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryDoesNotCompileNatsServer: importing worker or caller must not
// pull in nats-server; only mesh/embedded (tests, `toolmesh dev`) does.
func TestLibraryDoesNotCompileNatsServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/toolmesh/toolmesh/caller", "github.com/toolmesh/toolmesh/worker").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/nats-io/nats.go\n") {
		t.Fatalf("go list printed no nats.go; the check would prove nothing:\n%s", out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/nats-io/nats-server") {
			t.Errorf("worker or caller depends on %s", pkg)
		}
	}
}
