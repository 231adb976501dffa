package tests

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listedWhen calls list until ok holds of its result (what names that
// state for a timeout's message) and returns that result.
func listedWhen[R any](t *testing.T, what string, list func(context.Context) (R, error), ok func(R) bool) R {
	t.Helper()
	var res R
	waitFor(t, what, func() bool {
		var err error
		res, err = list(context.Background())
		return err == nil && ok(res)
	})
	return res
}

// toolsListedWhen lists cs's tools until ok holds of the list.
func toolsListedWhen(t *testing.T, cs *mcp.ClientSession, what string, ok func(*mcp.ListToolsResult) bool) *mcp.ListToolsResult {
	t.Helper()
	return listedWhen(t, what, func(ctx context.Context) (*mcp.ListToolsResult, error) { return cs.ListTools(ctx, nil) }, ok)
}

// promptsListedWhen lists cs's prompts until ok holds of the list.
func promptsListedWhen(t *testing.T, cs *mcp.ClientSession, what string, ok func(*mcp.ListPromptsResult) bool) *mcp.ListPromptsResult {
	t.Helper()
	return listedWhen(t, what, func(ctx context.Context) (*mcp.ListPromptsResult, error) { return cs.ListPrompts(ctx, nil) }, ok)
}
