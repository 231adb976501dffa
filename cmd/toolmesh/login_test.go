package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolmesh login refuses what it cannot log in to, each with the exit
// code of its Problem and a message naming what to fix; it never starts
// a flow for a binding that is not a login binding.
func TestLoginRefusesBadUsage(t *testing.T) {
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(tools, []byte(`tools:
  - namespace: cc
    binding:
      mcp: {url: "https://cc.example/mcp", oauth: {client_id: c, client_secret: client-secret-value}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no namespace":       {[]string{"login", "--config", tools}, 2, "one argument"},
		"no tools file":      {[]string{"login", "cc"}, 2, "--config"},
		"unknown namespace":  {[]string{"login", "--config", tools, "nope"}, 78, "no MCP binding with namespace"},
		"not a login client": {[]string{"login", "--config", tools, "cc"}, 78, "oauth: {login: true}"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "client-secret-value") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", name, code, stderr.String(), c.code, c.want)
		}
	}
}
