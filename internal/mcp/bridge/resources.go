package bridge

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/internal/textcut"
)

// offered is what the live server offers to read (mcpmap.Resources),
// kept per session and listed again when a URI is not in it, so a
// resource the server added since is found and one it never offered is
// not sent to it.
type offered struct {
	mu   sync.Mutex
	sess *mcp.ClientSession
	res  *mcpmap.Resources
}

func (o *offered) get(sess *mcp.ClientSession) *mcpmap.Resources {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sess != sess {
		return nil
	}
	return o.res
}

func (o *offered) set(sess *mcp.ClientSession, res *mcpmap.Resources) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sess, o.res = sess, res
}

// ownedURI is the URI to send the server for a read or a subscription
// of uri: refused (invalid_input, ran "no") when it is malformed or has a
// ".." segment (mcpmap.ResourceURI), and not found unless the server
// listed it or one of its templates matches its normal form. Only then
// does the server see it.
func (b *Bridge) ownedURI(ctx context.Context, sess *mcp.ClientSession, uri string) (string, error) {
	normal, err := mcpmap.ResourceURI(uri)
	if err != nil {
		return "", err
	}
	if send, ok := b.offered.get(sess).Owns(uri, normal); ok {
		return send, nil
	}
	rs, err := collect(sess.Resources(ctx, nil))
	if err != nil {
		return "", err
	}
	// A server that lists resources but no templates may not answer
	// resources/templates/list: it has none to match.
	ts, _ := collect(sess.ResourceTemplates(ctx, nil))
	res := mcpmap.NewResources(rs, ts)
	b.offered.set(sess, res)
	if send, ok := res.Owns(uri, normal); ok {
		return send, nil
	}
	return "", resourceNotFound(uri)
}

// resourceNotFound is the Problem of a read of a URI the server does not
// offer; the gateway answers it as MCP's resource-not-found error
// (SEP-2164: invalid params, the URI in its data).
func resourceNotFound(uri string) *envelope.Problem {
	return envelope.Problemf(envelope.CodeInvalidInput, "the MCP server offers no resource %q: it neither listed it nor has a template matching it", clipURIText(uri)).
		WithRan(envelope.RanNo).
		WithExtension("mcp_error", map[string]any{"code": jsonrpc.CodeInvalidParams, "message": "Resource not found", "data": map[string]string{"uri": uri}})
}

// clipURIText bounds a URI quoted in a Problem's detail.
func clipURIText(uri string) string { return textcut.Clip(uri, 200) }
