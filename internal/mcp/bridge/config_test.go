package bridge

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/configkeys"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []Entry
		err        string
	}{
		{name: "stdio and http beside a cli tool", yaml: `
tools:
  - name: files.search
    binding: {cli: {cmd: rg}}
  - namespace: fs
    binding:
      mcp: {command: npx, args: [-y, server-filesystem, /data], env: {TOKEN: x}}
  - namespace: gh
    binding:
      mcp: {url: "https://mcp.example.com/mcp", headers: {Authorization: "Bearer y"}}
`, want: []Entry{
			{Namespace: "fs", Server: ServerConfig{Command: "npx", Args: []string{"-y", "server-filesystem", "/data"}, Env: map[string]string{"TOKEN": "x"}}},
			{Namespace: "gh", Server: ServerConfig{URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer y"}}},
		}},
		{name: "no namespace", yaml: "tools: [{binding: {mcp: {command: x}}}]", err: "field namespace is required"},
		{name: "bad namespace", yaml: "tools: [{namespace: 'a b', binding: {mcp: {command: x}}}]", err: "field namespace"},
		{name: "neither", yaml: "tools: [{namespace: a, binding: {mcp: {args: [x]}}}]", err: "set command"},
		{name: "both", yaml: "tools: [{namespace: a, binding: {mcp: {command: x, url: 'http://h'}}}]", err: "not both"},
		{name: "typo", yaml: "tools: [{namespace: a, binding: {mcp: {comand: x}}}]", err: "comand"},
		{name: "unknown protocol", yaml: "tools: [{namespace: a, binding: {mcp: {command: x, protocol: '2024-11-05'}}}]", err: "binding.mcp.protocol"},
		{name: "bad url", yaml: "tools: [{namespace: a, binding: {mcp: {url: 'ftp://h'}}}]", err: "binding.mcp.url"},
		{name: "headers without url", yaml: "tools: [{namespace: a, binding: {mcp: {command: x, headers: {a: b}}}}]", err: "headers need url"},
		{name: "name with mcp", yaml: "tools: [{name: n, namespace: a, binding: {mcp: {command: x}}}]", err: "field name"},
		{name: "duplicate namespace", yaml: "tools: [{namespace: a, binding: {mcp: {command: x}}}, {namespace: a, binding: {mcp: {command: y}}}]", err: "already bound"},
		{name: "cli and mcp", yaml: "tools: [{namespace: a, binding: {cli: {cmd: x}, mcp: {command: x}}}]", err: "not both"},
		{name: "namespace on cli", yaml: "tools: [{name: n, namespace: a, binding: {cli: {cmd: x}}}]", err: "only an MCP binding"},
		{name: "not yaml", yaml: "tools: [", err: "not valid YAML"},
		{name: "typo names the nearest key", yaml: "tools: [{namespace: a, binding: {mcp: {comand: x}}}]", err: `unknown field "comand" in tools[0].binding.mcp (did you mean command?)`},
		{name: "misplaced sandbox", yaml: "tools: [{namespace: a, binding: {mcp: {command: x, sandbox: {}}}}]",
			err: `unknown field "sandbox" in tools[0].binding.mcp: sandbox is not valid there; it belongs at tools[0].sandbox`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.yaml))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d entries, want %d", len(got), len(c.want))
			}
			for i := range got {
				g, w := got[i], c.want[i]
				if g.Namespace != w.Namespace || g.Server.Command != w.Server.Command || g.Server.URL != w.Server.URL ||
					strings.Join(g.Server.Args, " ") != strings.Join(w.Server.Args, " ") || len(g.Server.Env) != len(w.Server.Env) ||
					len(g.Server.Headers) != len(w.Server.Headers) || len(g.InheritEnv) == 0 {
					t.Fatalf("entry %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestErrorsKeepSecrets(t *testing.T) {
	_, err := Parse([]byte("tools: [{namespace: a, binding: {mcp: {url: 'ftp://user:hunter2@h'}}}]"))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v: must fail without echoing the URL's secret", err)
	}
	_, err = Parse([]byte("tools: [{namespace: a, binding: {mcp: {command: x, env: hunter2}}}]"))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v: must fail without echoing the env's value", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("tools: [{namespace: fs, binding: {mcp: {command: npx, args: [a], env: {K: v}}}}]"))
	f.Add([]byte("tools: [{namespace: gh, binding: {mcp: {url: 'https://h/mcp', headers: {A: b}}}}]"))
	f.Add([]byte("tools: [{namespace: a, binding: {mcp: [1, 2]}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse(data)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Namespace == "" || (e.Server.Command == "") == (e.Server.URL == "") {
				t.Fatalf("invalid entry accepted: %+v", e)
			}
		}
	})
}

// The tools file's shape knows exactly the keys of binding.mcp that
// ServerConfig reads, so the key check and the decoder agree.
func TestMCPBindingShapeMatchesServerConfig(t *testing.T) {
	typ := reflect.TypeOf(ServerConfig{})
	var want []string
	for i := 0; i < typ.NumField(); i++ {
		want = append(want, typ.Field(i).Tag.Get("yaml"))
	}
	var got []string
	for k := range configkeys.MCPBinding().Fields {
		got = append(got, k)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("shape %v, ServerConfig %v", got, want)
	}
}
