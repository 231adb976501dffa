package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An HTTP server sends what concerns one request — its progress and log
// messages, the notifications the server relates to it — on the response
// stream of that request's POST (MCP's streamable HTTP transport), and
// what concerns none on the session's standalone GET stream. The SDK
// merges every stream into one, so the bridge reads each stream as the
// SDK does (streamTap) and ties what a call's own stream carries to that
// call, whatever else is in flight: the POST's context is the call's,
// and carries its sink (withCallSink).

// callSinkKey is the context key of a forwarded call's sink.
type callSinkKey struct{}

// withCallSink marks ctx as one call's (sk is nil for a unary call,
// which takes no log messages).
func withCallSink(ctx context.Context, sk *sink) context.Context {
	return context.WithValue(ctx, callSinkKey{}, sk)
}

// callSinkOf returns the sink of the call ctx belongs to; ok is false
// when ctx is no call's (the standalone stream, the session's own
// requests).
func callSinkOf(ctx context.Context) (sk *sink, ok bool) {
	sk, ok = ctx.Value(callSinkKey{}).(*sink)
	return sk, ok
}

// headerTransport adds the binding's headers to every request and taps
// every event stream a response carries (tap sees each notification as
// the SDK reads it, with the request's context), and the answer to each
// tools/list, whose tool definitions defs keeps as the server sent them.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
	tap     func(ctx context.Context, n *jsonrpc.Request)
	defs    *toolDefs
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	listing := h.notesList(r)
	resp, err := h.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	switch {
	case sse && (h.tap != nil || listing):
		st := &streamTap{ReadCloser: resp.Body, ctx: r.Context(), on: h.tap}
		if listing {
			st.onResponse = h.defs.received
		}
		resp.Body = st
	case listing && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
		resp.Body = h.readList(resp.Body)
	}
	return resp, err
}

// notesList reports whether r posts a tools/list request, noting it in
// defs so its answer's definitions are kept.
func (h headerTransport) notesList(r *http.Request) bool {
	if h.defs == nil || r.Method != http.MethodPost || r.GetBody == nil || r.ContentLength > maxTapEvent {
		return false
	}
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxTapEvent))
	if err != nil {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.Method != "tools/list" {
		return false
	}
	h.defs.sent(msg)
	return true
}

// readList reads a JSON answer to tools/list (at most maxTapEvent bytes
// of it) for defs and gives the SDK the same bytes.
func (h headerTransport) readList(body io.ReadCloser) io.ReadCloser {
	data, err := io.ReadAll(io.LimitReader(body, maxTapEvent+1))
	rest := io.MultiReader(bytes.NewReader(data), body)
	if err == nil && len(data) <= maxTapEvent {
		if msg, err := jsonrpc.DecodeMessage(data); err == nil {
			h.defs.received(msg)
		}
	}
	return struct {
		io.Reader
		io.Closer
	}{rest, body}
}

// maxTapEvent bounds one event the tap gathers; a longer one is left to
// the SDK (which has its own bound) without being tapped.
const maxTapEvent = 1 << 20

// streamTap reads a server-sent event stream for the SDK and hands each
// JSON-RPC notification in it to on before the SDK can see what follows
// it, so a call's notifications keep their wire order with its result.
type streamTap struct {
	io.ReadCloser
	ctx context.Context
	on  func(context.Context, *jsonrpc.Request)
	// onResponse, when set, sees each JSON-RPC response in the stream.
	onResponse func(jsonrpc.Message)
	line       []byte // the line read so far
	data       []byte // the event's data lines so far
	over       bool   // the event outgrew maxTapEvent
}

func (t *streamTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			if len(t.line) < maxTapEvent {
				t.line = append(t.line, c)
			} else {
				t.over = true
			}
			continue
		}
		t.endLine(bytes.TrimSuffix(t.line, []byte("\r")))
		t.line = t.line[:0]
	}
	return n, err
}

// endLine takes one line of the stream: a data line adds to the event, a
// blank line ends it.
func (t *streamTap) endLine(line []byte) {
	if len(line) == 0 {
		if len(t.data) > 0 && !t.over {
			t.dispatch(t.data)
		}
		t.data, t.over = t.data[:0], false
		return
	}
	if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		v = bytes.TrimPrefix(v, []byte(" "))
		if len(t.data) > 0 {
			t.data = append(t.data, '\n')
		}
		if len(t.data)+len(v) > maxTapEvent {
			t.over = true
			return
		}
		t.data = append(t.data, v...)
	}
}

func (t *streamTap) dispatch(data []byte) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && t.on != nil {
		t.on(t.ctx, req)
	}
	if _, ok := msg.(*jsonrpc.Response); ok && t.onResponse != nil {
		t.onResponse(msg)
	}
}

// onStreamNotification routes a notification read off an HTTP server's
// event stream: progress by its token, a log message to the call whose
// stream carried it (or, off every call's stream, as routeLog does).
func (b *Bridge) onStreamNotification(ctx context.Context, n *jsonrpc.Request) {
	switch n.Method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(n.Params, &p) == nil {
			b.routeProgress(&p)
		}
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		sk, ok := callSinkOf(ctx)
		switch {
		case !ok:
			b.routeLog(&p)
		case sk != nil:
			sk.offer(&p)
		default:
			b.logServer(&p)
		}
	}
}
