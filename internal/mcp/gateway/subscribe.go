package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// gwSubs are the gateway's resource subscriptions: one mesh call per URI
// (the namespace's resources_subscribe surface op) while any client
// session is subscribed to it; every update it streams becomes
// notifications/resources/updated to the subscribed sessions (the SDK
// keeps which sessions those are).
type gwSubs struct {
	mu    sync.Mutex
	byURI map[string]*gwSub
}

// gwSub is one URI's mesh subscription and the sessions subscribed.
type gwSub struct {
	cancel   context.CancelFunc
	sessions map[*mcp.ServerSession]bool
}

// subscribe subscribes the client's session to a resource: the first
// session for a URI opens the mesh subscription and waits until the
// bridged server has accepted it.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	g.subs.mu.Lock()
	defer g.subs.mu.Unlock()
	if s, ok := g.subs.byURI[uri]; ok {
		g.watchSession(s, req.Session, uri)
		return nil
	}
	tool, err := g.route(ctx, req, wire.MCPResourcesSubscribe, uri)
	if err != nil {
		return err
	}
	subCtx, cancel := context.WithCancel(context.Background())
	st, err := g.openSubscription(ctx, subCtx, req, tool, uri)
	if err != nil {
		cancel()
		return err
	}
	s := &gwSub{cancel: cancel, sessions: map[*mcp.ServerSession]bool{}}
	if g.subs.byURI == nil {
		g.subs.byURI = map[string]*gwSub{}
	}
	g.subs.byURI[uri] = s
	g.watchSession(s, req.Session, uri)
	go g.followSubscription(subCtx, req, tool, uri, st)
	return nil
}

// watchSession records ss on s and drops it when the session ends, so a
// client that goes away without unsubscribing does not hold the mesh
// subscription. Called with g.subs.mu held.
func (g *Gateway) watchSession(s *gwSub, ss *mcp.ServerSession, uri string) {
	if s.sessions[ss] {
		return
	}
	s.sessions[ss] = true
	go func() {
		_ = ss.Wait()
		g.dropSession(ss, uri)
	}()
}

// unsubscribe drops the client's session from a URI's subscription.
func (g *Gateway) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	g.dropSession(req.Session, req.Params.URI)
	return nil
}

// dropSession removes ss from uri's subscription, ending the mesh call
// after the last session.
func (g *Gateway) dropSession(ss *mcp.ServerSession, uri string) {
	g.subs.mu.Lock()
	defer g.subs.mu.Unlock()
	s, ok := g.subs.byURI[uri]
	if !ok {
		return
	}
	delete(s.sessions, ss)
	if len(s.sessions) == 0 {
		s.cancel()
		delete(g.subs.byURI, uri)
	}
}

// openSubscription starts the mesh call under subCtx and waits (under
// ctx, the client's request) for its first delta, which says the server
// is subscribed; a failure before it is the client's error.
func (g *Gateway) openSubscription(ctx, subCtx context.Context, req mcp.Request, tool, uri string) (*caller.Stream, error) {
	var opts []caller.Option
	if bearer := bearerOfExtra(req.GetExtra()); bearer != "" {
		opts = append(opts, caller.WithBearer(bearer))
	}
	st, err := g.cfg.Caller.Stream(subCtx, tool, map[string]string{"uri": uri}, opts...)
	if err != nil {
		return nil, rpcError(envelope.AsProblem(err, envelope.CodeInternal))
	}
	first := make(chan error, 1)
	go func() {
		for {
			ev, err := st.Next()
			switch {
			case err != nil:
				first <- rpcError(envelope.AsProblem(err, envelope.CodeInternal))
				return
			case ev.Type == envelope.EventDelta:
				first <- nil
				return
			case ev.Type == envelope.EventError:
				first <- rpcError(ev.Problem())
				return
			case ev.IsTerminal():
				first <- &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the subscription ended at once"}
				return
			}
		}
	}()
	select {
	case err = <-first:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

// followSubscription relays a subscription's updates until subCtx ends,
// subscribing again when the mesh call ends under it (the server
// restarted, the worker went): after the Problem's retry_after, else 1s.
func (g *Gateway) followSubscription(subCtx context.Context, req mcp.Request, tool, uri string, st *caller.Stream) {
	for {
		wait := g.relayUpdates(subCtx, uri, st)
		_ = st.Close()
		for {
			select {
			case <-subCtx.Done():
				return
			case <-time.After(wait):
			}
			var err error
			if st, err = g.openSubscription(subCtx, subCtx, req, tool, uri); err == nil {
				break
			}
			g.log.Warn("mcp gateway: subscribing again failed", "uri", uri, "err", err)
			wait = time.Second
		}
	}
}

// relayUpdates sends notifications/resources/updated for every update
// delta, and returns how long to wait before subscribing again once the
// call ends.
func (g *Gateway) relayUpdates(ctx context.Context, uri string, st *caller.Stream) time.Duration {
	for {
		ev, err := st.Next()
		if err != nil || ev.IsTerminal() {
			wait := time.Second
			if p := ev.Problem(); p != nil && p.RetryAfter != nil {
				wait = time.Duration(*p.RetryAfter * float64(time.Second))
			}
			return wait
		}
		var d struct {
			Updated string `json:"updated"`
		}
		if ev.Type == envelope.EventDelta && json.Unmarshal(ev.Data, &d) == nil && d.Updated != "" {
			_ = g.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}
