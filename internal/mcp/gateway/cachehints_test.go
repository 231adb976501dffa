package gateway

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCacheHintsArePrivatePerPerson: a listing asked for by a signed-in
// person (a validated token) or with a bearer is theirs alone; only an
// anonymous one may be cached for everyone.
func TestCacheHintsArePrivatePerPerson(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra *mcp.RequestExtra
		want  string
	}{
		{"anonymous", nil, "public"},
		{"no credentials", &mcp.RequestExtra{Header: http.Header{}}, "public"},
		{"bearer", &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer t"}}}, "private"},
		{"signed in", &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "alice"}}, "private"},
	} {
		req := &mcp.ServerRequest[*mcp.ListToolsParams]{Params: &mcp.ListToolsParams{}, Extra: tc.extra}
		if got := cacheHints(req).CacheScope; got != tc.want {
			t.Errorf("%s: cacheScope %q, want %q", tc.name, got, tc.want)
		}
	}
}
