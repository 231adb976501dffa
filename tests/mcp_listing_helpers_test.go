package tests

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolsListedWhen lists cs's tools until ok holds of the list (what names
// that state for a timeout's message) and returns that list.
func toolsListedWhen(t *testing.T, cs *mcp.ClientSession, what string, ok func(*mcp.ListToolsResult) bool) *mcp.ListToolsResult {
	t.Helper()
	var res *mcp.ListToolsResult
	waitFor(t, what, func() bool {
		var err error
		res, err = cs.ListTools(context.Background(), nil)
		return err == nil && ok(res)
	})
	return res
}

// promptsListedWhen lists cs's prompts until ok holds of the list (what
// names that state for a timeout's message) and returns that list.
func promptsListedWhen(t *testing.T, cs *mcp.ClientSession, what string, ok func(*mcp.ListPromptsResult) bool) *mcp.ListPromptsResult {
	t.Helper()
	var res *mcp.ListPromptsResult
	waitFor(t, what, func() bool {
		var err error
		res, err = cs.ListPrompts(context.Background(), nil)
		return err == nil && ok(res)
	})
	return res
}
