package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/worker"
)

// sink relays one call's MCP progress to its mesh emitter on a goroutine
// of its own: an emit may wait for the mesh caller's credit, and that
// must never stall the MCP connection every call shares. Progress is
// advisory, so when the call's small queue is full a notification is
// dropped rather than waited for.
type sink struct {
	ch   chan *mcp.ProgressNotificationParams
	done chan struct{}

	mu     sync.Mutex
	closed bool
}

func newSink(emit worker.Emitter) *sink {
	s := &sink{ch: make(chan *mcp.ProgressNotificationParams, 64), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		pct := 0.0
		for p := range s.ch {
			if p.Total > 0 {
				pct = min(max(p.Progress/p.Total*100, pct), 100)
			}
			msg := p.Message
			if p.Total <= 0 {
				msg = fmt.Sprintf("%s (%g)", p.Message, p.Progress)
			}
			if emit.Progress(pct, msg) != nil {
				return
			}
		}
	}()
	return s
}

func (s *sink) offer(p *mcp.ProgressNotificationParams) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.ch <- p:
	default:
	}
}

// close stops the relay and waits for it, so no progress follows the
// call's terminal event.
func (s *sink) close() {
	s.mu.Lock()
	s.closed = true
	close(s.ch)
	s.mu.Unlock()
	<-s.done
}

// onProgress routes a progress notification the SDK handled to its call.
// A stdio server's progress is routed as it is read instead (processConn),
// so here only an HTTP server's is.
func (b *Bridge) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if b.cfg.Entry.Server.Command != "" {
		return
	}
	b.routeProgress(req.Params)
}

// routeProgress hands a server's progress notification to its call.
func (b *Bridge) routeProgress(p *mcp.ProgressNotificationParams) {
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	if v, ok := b.sinks.Load(token); ok {
		v.(*sink).offer(p)
	}
}

func asJSONRPC(err error, target **jsonrpc.Error) bool { return errors.As(err, target) }
