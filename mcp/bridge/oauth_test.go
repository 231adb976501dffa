package bridge

import (
	"strings"
	"testing"
)

func TestParseOAuthClient(t *testing.T) {
	t.Setenv("TOOLMESH_TEST_BRIDGE_SECRET", "from-the-environment")
	got, err := Parse([]byte(`tools: [{namespace: r, binding: {mcp: {url: "https://r.example/mcp", oauth: {client_id: c, client_secret_env: TOOLMESH_TEST_BRIDGE_SECRET}}}}]`))
	if err != nil || len(got) != 1 || got[0].Server.OAuth == nil || got[0].Server.OAuth.secret() != "from-the-environment" {
		t.Fatalf("%+v, %v", got, err)
	}
	for name, c := range map[string]struct{ yaml, err string }{
		"no url":          {"{command: x, oauth: {client_id: c, client_secret: s}}", "oauth needs url"},
		"no client id":    {"{url: 'https://h', oauth: {client_secret: s}}", "client_id"},
		"two secrets":     {"{url: 'https://h', oauth: {client_id: c, client_secret: s, client_secret_env: V}}", "one of"},
		"unset variable":  {"{url: 'https://h', oauth: {client_id: c, client_secret_env: TOOLMESH_TEST_UNSET_SECRET}}", "empty or unset"},
		"static bearer":   {"{url: 'https://h', headers: {authorization: x}, oauth: {client_id: c, client_secret: s}}", "exclude each other"},
		"typo in a field": {"{url: 'https://h', oauth: {client: c, client_secret: s}}", "client"},
	} {
		_, err := Parse([]byte("tools: [{namespace: r, binding: {mcp: " + c.yaml + "}}]"))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, c.err)
		}
	}
}
