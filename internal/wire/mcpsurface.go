package wire

import (
	"slices"
	"strings"
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

// SplitMCPSurface returns the namespace and op of a surface tool, given
// its spec's name and tags (name "<namespace>._mcp.<op>" and the
// MCPSurfaceTag), and false for every other tool.
func SplitMCPSurface(name string, tags []string) (namespace, op string, ok bool) {
	i := strings.LastIndex(name, mcpSurfaceInfix)
	if i <= 0 || strings.Contains(name[i+len(mcpSurfaceInfix):], ".") || !slices.Contains(tags, MCPSurfaceTag) {
		return "", "", false
	}
	return name[:i], name[i+len(mcpSurfaceInfix):], true
}

// IsMCPSurfaceReserved reports whether an MCP server's tool name would
// land in the surface ops' reserved segment once namespaced.
func IsMCPSurfaceReserved(mcpToolName string) bool {
	return strings.HasPrefix(mcpToolName, mcpSurfaceReservedPrefix)
}
