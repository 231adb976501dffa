package bridge

import (
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/worker"
)

// sink relays one call's MCP progress and log messages to its mesh
// emitter, in the order the server sent them, on a goroutine of its own:
// an emit may wait for the mesh caller's credit, and that must never
// stall the MCP connection every call shares. Both are advisory, so when
// the call's small queue is full a notification is dropped rather than
// waited for.
type sink struct {
	ch   chan any // *mcp.ProgressNotificationParams or *mcp.LoggingMessageParams
	done chan struct{}

	mu     sync.Mutex
	closed bool
}

func newSink(emit worker.Emitter) *sink {
	s := &sink{ch: make(chan any, 64), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		pct := 0.0
		for item := range s.ch {
			var err error
			switch p := item.(type) {
			case *mcp.ProgressNotificationParams:
				var msg string
				pct, msg = mcpmap.MeshProgress(p, pct)
				err = emit.Progress(pct, msg)
			case *mcp.LoggingMessageParams:
				err = emitLog(emit, p)
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// emitLog sends a server's log message on the call as a log event
// (docs/protocol.md §5.1) when the emitter can.
func emitLog(emit worker.Emitter, p *mcp.LoggingMessageParams) error {
	le, ok := emit.(worker.LogEmitter)
	if !ok {
		return nil
	}
	l, err := mcpmap.LogMessage(p)
	if err != nil {
		return nil
	}
	return le.Log(l)
}

func (s *sink) offer(p any) {
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

// routeLog hands a server's log message that no call's own stream
// carried (any of a stdio server's, an HTTP server's on its standalone
// stream) to the one streaming call in flight: such a message names no
// request, so with several calls in flight (or none, or a unary one) it
// cannot be tied to a caller and goes to the worker's log instead, never
// to a caller it may not concern.
func (b *Bridge) routeLog(p *mcp.LoggingMessageParams) {
	if sk, _ := b.askers.onlySink(); sk != nil {
		sk.offer(p)
		return
	}
	b.logServer(p)
}

// logServer writes a server's log message to the worker's log.
func (b *Bridge) logServer(p *mcp.LoggingMessageParams) {
	b.log.Info("mcp server log", "level", string(p.Level), "logger", p.Logger, "data", b.secrets.String(fmt.Sprint(p.Data)))
}

func asJSONRPC(err error, target **jsonrpc.Error) bool { return errors.As(err, target) }
