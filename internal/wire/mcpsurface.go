package wire

import (
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
)

// MCP surface tools (docs/protocol.md §24): a bridged MCP server's
// resources, prompts and completions travel on the mesh as tools of the
// bridge's namespace named "<namespace>._mcp.<op>", tagged MCPSurfaceTag,
// so they use the call machinery — subjects, Problems, liveness,
// permissions — like any tool. The MCP gateway serves them as MCP's own
// methods instead of as tools.
const (
	// MCPSurfaceSegment is the reserved name segment between a namespace
	// and a surface op; a bridged server's tool may not start with it.
	MCPSurfaceSegment = "_mcp"
	// MCPSurfaceTag marks a surface tool's spec.
	MCPSurfaceTag = "mcp-surface"

	// The surface ops, each one MCP method (docs/protocol.md §24.1).
	MCPResourcesList         = "resources_list"
	MCPResourceTemplatesList = "resources_templates_list"
	MCPResourcesRead         = "resources_read"
	MCPResourcesSubscribe    = "resources_subscribe"
	MCPPromptsList           = "prompts_list"
	MCPPromptsGet            = "prompts_get"
	MCPComplete              = "complete"
	// MCPToolsCallUnlisted is tools/call of a name the server did not
	// list, so the server answers an unknown tool in its own words.
	MCPToolsCallUnlisted     = "tools_call_unlisted"
	mcpSurfaceInfix          = "." + MCPSurfaceSegment + "."
	mcpSurfaceReservedPrefix = MCPSurfaceSegment + "."
)

// MCPSurfaceName is the mesh name of namespace's surface op.
func MCPSurfaceName(namespace, op string) string { return namespace + mcpSurfaceInfix + op }

// SplitMCPSurface returns the namespace and op of a surface tool's spec
// (name "<namespace>._mcp.<op>" and the MCPSurfaceTag), and false for
// every other tool.
func SplitMCPSurface(spec *envelope.ToolSpec) (namespace, op string, ok bool) {
	i := strings.LastIndex(spec.Name, mcpSurfaceInfix)
	if i <= 0 || strings.Contains(spec.Name[i+len(mcpSurfaceInfix):], ".") {
		return "", "", false
	}
	for _, t := range spec.Tags {
		if t == MCPSurfaceTag {
			return spec.Name[:i], spec.Name[i+len(mcpSurfaceInfix):], true
		}
	}
	return "", "", false
}

// IsMCPSurfaceReserved reports whether an MCP server's tool name would
// land in the surface ops' reserved segment once namespaced.
func IsMCPSurfaceReserved(mcpToolName string) bool {
	return strings.HasPrefix(mcpToolName, mcpSurfaceReservedPrefix)
}
