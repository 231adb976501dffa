package configkeys

import (
	"reflect"
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/argtemplate"
	"github.com/toolmesh/toolmesh/internal/sandbox"
)

// ToolsFile is the shape of a tools file, the one both its readers (the
// CLI loader, worker/cli, and the MCP bridge, mcp/bridge) check first, so
// a key is valid or refused the same way whichever reads it.
func ToolsFile() *Node {
	limits := []string{"timeout", "max_output_bytes", "max_concurrent", "kill_grace"}
	tool := Keys(append([]string{"name", "title", "description", "version", "input_schema", "output_schema",
		"streaming", "tags", "namespace"}, limits...)...)
	tool.Fields["annotations"] = Keys(jsonNames(reflect.TypeOf(envelope.Annotations{}))...)
	tool.Fields["sandbox"] = Sandbox()
	tool.Fields["binding"] = Object(map[string]*Node{"cli": CLIBinding(), "mcp": MCPBinding()})
	return Object(map[string]*Node{
		"defaults":    Keys(limits...),
		"inherit_env": nil,
		"sandbox":     Sandbox(),
		"tools":       ListOf(tool),
	})
}

// Sandbox is the shape of a sandbox block (sandbox.Policy).
func Sandbox() *Node {
	n := Keys(jsonNames(reflect.TypeOf(sandbox.Policy{}))...)
	n.Fields["limits"] = Keys(jsonNames(reflect.TypeOf(sandbox.Limits{}))...)
	return n
}

// CLIBinding is the shape of binding.cli: the binding format's fields and
// toolmesh's hardening extensions (arg_rules, end_of_options).
func CLIBinding() *Node {
	n := Keys(append(argtemplate.BindingFields(), "end_of_options")...)
	n.Fields["arg_rules"] = MapOf(Keys("no_dash", "under"))
	return n
}

// MCPBinding is the shape of binding.mcp (mcp/bridge.ServerConfig).
func MCPBinding() *Node {
	n := Keys("command", "args", "env", "url", "headers", "skip", "client_capabilities", "protocol", "oauth")
	n.Fields["oauth"] = Keys("client_id", "client_secret", "client_secret_env", "issuer", "login", "token_file", "client_metadata_url", "scopes")
	return n
}

// jsonNames lists the JSON member names of a struct type.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
