package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/worker"
)

// subscriptions are the mesh calls following a resource of the bridged
// server (the resources_subscribe surface op). The server is subscribed
// to a URI once, while at least one call follows it on that session, and
// each notifications/resources/updated wakes every call following the URI.
type subscriptions struct {
	mu    sync.Mutex
	byURI map[subKey]map[chan struct{}]struct{}
}

// subKey is one URI on one session: a restarted server is subscribed anew.
type subKey struct {
	sess *mcp.ClientSession
	uri  string
}

// add follows uri on sess, subscribing the server when it is the first
// follower; release stops following, unsubscribing after the last.
func (s *subscriptions) add(ctx context.Context, sess *mcp.ClientSession, uri string) (<-chan struct{}, func(), error) {
	k := subKey{sess, uri}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byURI[k]) == 0 {
		if err := sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			return nil, nil, err
		}
	}
	if s.byURI == nil {
		s.byURI = map[subKey]map[chan struct{}]struct{}{}
	}
	if s.byURI[k] == nil {
		s.byURI[k] = map[chan struct{}]struct{}{}
	}
	ch := make(chan struct{}, 1)
	s.byURI[k][ch] = struct{}{}
	return ch, func() { s.release(k, ch) }, nil
}

func (s *subscriptions) release(k subKey, ch chan struct{}) {
	s.mu.Lock()
	delete(s.byURI[k], ch)
	last := len(s.byURI[k]) == 0
	if last {
		delete(s.byURI, k)
	}
	s.mu.Unlock()
	if last {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = k.sess.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: k.uri})
	}
}

// notify wakes every call following uri; an update already pending for a
// call stands for this one too (each says only "read it again").
func (s *subscriptions) notify(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, chans := range s.byURI {
		if k.uri != uri {
			continue
		}
		for ch := range chans {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// onResourceUpdated routes the server's notifications/resources/updated.
func (b *Bridge) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	b.subs.notify(req.Params.URI)
}

// subscribe is the resources_subscribe surface op: a streaming call that
// subscribes the server to the URI, sends {"subscribed": uri} once it
// has, then {"updated": uri} for every update, until the caller cancels it
// (unsubscribe) or the server's session ends (worker_lost, retry_after:
// subscribe again).
func subscribe(ctx context.Context, b *Bridge, sess *mcp.ClientSession, req *worker.Request, emit worker.Emitter) (any, error) {
	var p mcp.SubscribeParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	uri, err := b.ownedURI(ctx, sess, p.URI) // the server's spelling; the caller is answered in its own
	if err != nil {
		return nil, err
	}
	ended := b.sessionEnded(sess)
	updates, release, err := b.subs.add(ctx, sess, uri)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := emit.Delta(map[string]string{"subscribed": p.URI}); err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ended:
			return nil, b.downProblem("ended its session")
		case <-updates:
			if err := emit.Delta(map[string]string{"updated": p.URI}); err != nil {
				return nil, err
			}
		}
	}
}
