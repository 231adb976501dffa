package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/toolmesh/toolmesh/envelope"
)

// outbox holds a stream's events accepted from the handler and not yet
// published. One publish is in progress at a time (flushing); events the
// handler emits meanwhile pile up here and travel together in the next
// message, so a fast producer sends few large messages and a slow one
// sends each event at once. Nothing ever waits on a timer to fill a batch.
type outbox struct {
	buf      []byte // encoded events, back to back
	sizes    []int  // the size of each
	firstSeq int64  // the number of the first
	flushing bool   // a flush goroutine is publishing
	idle     *sync.Cond
}

// reject answers a call that is refused before it runs.
func (c *call) reject(p *envelope.Problem) {
	p = p.WithRan(envelope.RanNo) // refused before admission: nothing ran
	c.mu.Lock()
	c.ended = true
	ev, data, _ := c.encode(envelope.ErrorEvent(p)) // a terminal event always encodes, if only as an error
	_ = c.sendTerminalLocked(ev, data)
	c.mu.Unlock()
	c.observeRefused(context.Background(), p)
}

// finish sends the one terminal event and returns the Problem it carried
// (nil for a result): a result too large to send goes out as an error.
// Encoding a large result can take a while, so it happens outside c.mu:
// heartbeats keep the caller informed until the terminal is on its way.
func (c *call) finish(data json.RawMessage, p *envelope.Problem) *envelope.Problem {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		c.w.untrack(c)
		return c.redactor().Problem(p)
	}
	c.ended = true
	c.mu.Unlock()
	// A terminal event always encodes, if only as an error.
	var ev envelope.ToolEvent
	var enc []byte
	if p != nil {
		// Redacted before anything reads it: the error event, the tool's
		// last_error in $SRV.STATS and the span status all come from p.
		// Every handler error loses the call's bearer and URL credentials.
		ev, enc, _ = c.encode(envelope.ErrorEvent(c.redactor().Problem(p)))
	} else {
		// checkResult made data with json.Marshal or checked it with
		// wire.Valid, so the result is written without a second check.
		ev, enc, _ = c.checkEncoded(envelope.ToolEvent{Type: envelope.EventResult, Data: data}, wire.AppendResultEvent(make([]byte, 0, 32+len(data)), data), nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendTerminalLocked(ev, enc)
}

// sendTerminalLocked records the call's stats, forgets the call and sends
// its encoded terminal event after every event before it; c.mu must be
// held. Stats come first, so a caller holding the terminal never reads
// stats that miss its call. It returns the Problem actually sent.
func (c *call) sendTerminalLocked(ev envelope.ToolEvent, data []byte) *envelope.Problem {
	p := ev.Problem()
	c.tool.record(time.Since(c.started), p)
	c.w.untrack(c)
	c.waitFlushedLocked()
	switch {
	case len(data) > c.w.piece():
		c.flushInlineLocked()
		c.sendChunksLocked(data)
	case c.stream || c.asked:
		c.queueLocked(data) // the terminal travels with the events still queued
		c.flushInlineLocked()
	case c.batch != nil:
		// Unary replies of a batch's calls coalesce; the batch releases
		// the reply subject after its last call (see batch.terminal).
		c.seq++
		c.batch.terminal(c, data)
		return p
	default:
		// A unary call gets exactly one message, a bare event: the reply
		// stays as cheap as a plain NATS response.
		c.seq++
		c.publish(data)
	}
	c.releaseReplyLocked()
	return p
}

// emit accepts a non-terminal event, waiting for credit in stream mode.
// In unary mode, for a plain request, and in a folded stream call for all
// but the start event, it sends nothing.
func (c *call) emit(ctx context.Context, ev envelope.ToolEvent) error {
	for {
		c.mu.Lock()
		switch {
		case c.ended:
			c.mu.Unlock()
			return errCallEnded
		case !c.stream || c.fold && ev.Type != envelope.EventStart:
			c.mu.Unlock()
			return nil
		case c.sent < c.granted:
			err := c.enqueueLocked(ev)
			c.mu.Unlock()
			return err
		}
		c.mu.Unlock()
		select {
		case <-c.credit:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// enqueueLocked encodes one non-terminal event straight into the outbox
// and makes sure a flush is under way; an event too large for one message
// goes out in chunks at once, after everything queued before it. c.mu
// must be held.
func (c *call) enqueueLocked(ev envelope.ToolEvent) error {
	start := len(c.out.buf)
	buf, err := ev.AppendJSON(c.out.buf)
	if err == nil && len(buf)-start > c.w.cfg.Limits.MaxResultBytes {
		err = c.tooLarge(ev.Type, len(buf)-start)
	}
	if err != nil {
		c.out.buf = buf[:start]
		return err
	}
	if size := len(buf) - start; size > c.w.piece() {
		data := append([]byte(nil), buf[start:]...)
		c.out.buf = buf[:start]
		c.waitFlushedLocked() // releases c.mu while it waits
		if c.ended {
			// The terminal was decided meanwhile (a goroutine of the
			// handler's emitted this): nothing may follow it.
			return errCallEnded
		}
		c.sent++
		c.flushInlineLocked()
		c.sendChunksLocked(data)
		return nil
	}
	c.sent++
	c.out.buf = buf
	c.numberLocked(len(buf) - start)
	if !c.out.flushing {
		c.out.flushing = true
		go c.flushLoop()
	}
	return nil
}

// numberLocked numbers the event of size bytes just appended to the outbox.
func (c *call) numberLocked(size int) {
	c.seq++
	if len(c.out.sizes) == 0 {
		c.out.firstSeq = c.seq
	}
	c.out.sizes = append(c.out.sizes, size)
}

// queueLocked numbers one encoded event and appends it to the outbox.
func (c *call) queueLocked(data []byte) {
	c.out.buf = append(c.out.buf, data...)
	c.numberLocked(len(data))
}

// flushLoop publishes the outbox until it is empty, releasing c.mu while
// each message goes out so that the handler can keep emitting.
func (c *call) flushLoop() {
	c.mu.Lock()
	for len(c.out.sizes) > 0 {
		body := c.takeFrameLocked()
		c.mu.Unlock()
		c.publish(body)
		c.mu.Lock()
	}
	c.out.flushing = false
	if c.out.idle != nil {
		c.out.idle.Broadcast()
	}
	c.mu.Unlock()
}

// waitFlushedLocked waits until no flush goroutine is publishing, so the
// caller of it may publish in order; c.mu must be held.
func (c *call) waitFlushedLocked() {
	if c.out == nil {
		return // not a stream: nothing is ever queued
	}
	for c.out.flushing {
		if c.out.idle == nil {
			c.out.idle = sync.NewCond(&c.mu)
		}
		c.out.idle.Wait()
	}
}

// flushInlineLocked publishes the outbox on this goroutine; no flush
// goroutine may be running. c.mu must be held.
func (c *call) flushInlineLocked() {
	if c.out == nil {
		return
	}
	for len(c.out.sizes) > 0 {
		c.publish(c.takeFrameLocked())
	}
}

// takeFrameLocked removes from the outbox the events that fit one
// message and returns that message's body: an events frame.
func (c *call) takeFrameLocked() []byte {
	// A frame line costs at most 48 bytes plus 8 per event; one event of
	// up to piece() bytes always fits (enqueueLocked chunks larger ones).
	room, n, size := c.w.maxPayload(), 0, 0
	for n < len(c.out.sizes) && n < wire.MaxFrameEvents && (n == 0 || 48+8*(n+1)+size+c.out.sizes[n] <= room) {
		size += c.out.sizes[n]
		n++
	}
	head := wire.AppendEventsHead(make([]byte, 0, 32+6*n+size), c.out.firstSeq, c.out.sizes[:n])
	body := append(head, c.out.buf[:size]...)
	c.out.firstSeq += int64(n)
	rest := copy(c.out.buf, c.out.buf[size:])
	c.out.buf = c.out.buf[:rest]
	c.out.sizes = c.out.sizes[:copy(c.out.sizes, c.out.sizes[n:])]
	return body
}

// publish sends one message on the call's reply subject.
func (c *call) publish(body []byte) {
	if c.batch != nil {
		body = c.batch.frame(c, body)
	}
	if c.serverReply() {
		c.markSent()
	}
	if err := c.w.nc.Publish(c.reply, body); err != nil {
		c.w.log.Warn("publish event", "call_id", c.key.id, "err", err)
	}
}

// serverReplyPrefix starts the reply subjects nats-server makes for
// requests that crossed a service import (see deploy/secure).
const serverReplyPrefix = "_R_."

func (c *call) serverReply() bool { return isServerReply(c.reply) }

func isServerReply(subject string) bool { return strings.HasPrefix(subject, serverReplyPrefix) }

// releaseReplyLocked ends a server-made reply mapping once the call is
// over. The call export streams its responses, so the server keeps the
// mapping until its response threshold passes (minutes) unless told the
// stream is done, and an empty message is how a streamed response says so.
// Other replies (a single-account mesh) need nothing.
func (c *call) releaseReplyLocked() {
	if c.serverReply() && (c.batch == nil || c.batch.ended(1)) {
		_ = c.w.nc.Publish(c.reply, nil)
	}
}

// encode returns ev's wire form (it reads nothing c.mu guards). A
// terminal event that cannot go out as it is (unencodable, or past
// MaxResultBytes) is replaced by the error event that says so, and that
// event is returned with its bytes. An event larger than one message is
// fine: it goes out in chunks.
func (c *call) encode(ev envelope.ToolEvent) (envelope.ToolEvent, []byte, error) {
	data, err := ev.AppendJSON(make([]byte, 0, 128+len(ev.Data)))
	return c.checkEncoded(ev, data, err)
}

// checkEncoded is encode's second half, for an event already written as
// data (err when writing it failed).
func (c *call) checkEncoded(ev envelope.ToolEvent, data []byte, err error) (envelope.ToolEvent, []byte, error) {
	if err != nil {
		if !ev.IsTerminal() {
			return ev, nil, err
		}
		ev = envelope.ErrorEvent(c.w.problems.New(envelope.CodeOutputInvalid, "terminal event cannot be encoded: "+err.Error()))
		data, _ = ev.AppendJSON(nil)
	}
	if len(data) > c.w.cfg.Limits.MaxResultBytes {
		p := c.tooLarge(ev.Type, len(data))
		if !ev.IsTerminal() {
			return ev, nil, p
		}
		ev = envelope.ErrorEvent(p)
		data, _ = ev.AppendJSON(nil)
	}
	return ev, data, nil
}

// tooLarge is the Problem of an event past MaxResultBytes.
func (c *call) tooLarge(typ envelope.EventType, size int) *envelope.Problem {
	return c.w.problems.New(envelope.CodePayloadTooLarge,
		fmt.Sprintf("%s event is %d bytes, more than this worker's max_result_bytes (%d)", typ, size, c.w.cfg.Limits.MaxResultBytes)).
		WithFix("Ask the tool for less (narrower arguments, paging), or raise the worker's MaxResultBytes and the caller's.", envelope.MaybeIncorrect)
}

// sendChunksLocked sends one event in pieces of at most one message's
// room, each numbered (in unary mode too) and marked i/n, so the caller
// reassembles the event in order and sees any lost piece as a gap.
func (c *call) sendChunksLocked(data []byte) {
	piece := c.w.piece()
	n := (len(data) + piece - 1) / piece
	// One buffer for every piece: Publish copies the message into the
	// connection's buffer before it returns, so the next piece may
	// overwrite it (a buffer per piece cost a second copy of the event).
	body := make([]byte, 0, 48+piece)
	for i := 0; i < n; i++ {
		c.seq++
		part := data[i*piece : min((i+1)*piece, len(data))]
		body = wire.AppendChunkHead(body[:0], c.seq, i+1, n)
		c.publish(append(body, part...))
	}
}
