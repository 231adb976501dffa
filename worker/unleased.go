package worker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// An unleased call (no caller= that its reply subject carries: nobody
// proves its sender alive) may wait for room — an execution slot, or its
// tool's own queue (an admitter) — only where this worker can see its sender
// leave, and one that waited is checked before it starts, so a sender's
// burst of calls sent just before it disconnected does not run for nobody
// (docs/protocol.md §8.5).
//
// The worker sees a sender leave only in its own account: it publishes a
// probe to a subject beside the call's reply subject in the same inbox
// (the reply's last token replaced), with a reply subject of its own, and
// round-trips to the server. A sender's request inbox is a wildcard over
// that prefix (nats.go's, the nats CLI's, every client's request mux,
// which drops a reply for a token it does not know), so while the sender
// is connected the probe is delivered and nothing comes back; once it is
// gone the server answers the probe "503 no responders" before it answers
// the round trip. The probe never goes to the reply subject itself: a
// plain requester takes the first message there for its answer.
//
// Across accounts (a reply subject the server made, `_R_.…`) the server
// says nothing to the exporting account when the requester leaves: it
// forgets the mapping and drops what is published to it, and a probe to
// it is answered neither way (nats-server 2.9). Such a call, and one
// whose reply has no inbox prefix to probe beside (fewer than three
// tokens), does not wait: with no room free it is refused overloaded,
// unrun, with a retry_after.

// senderProbeToken is the last token of a sender probe's subject, beside
// the call's own reply subject. A request mux holds no reply under it.
const senderProbeToken = "tm-sender-probe"

// leased reports whether c's caller proves it is alive (§8.3).
func (c *call) leased() bool { return c.callerID != "" && c.repliesToCaller() }

// senderVisible reports whether this worker can see c's sender leave:
// c arrived in the worker's own account, on a reply subject with an inbox
// prefix to probe beside.
func (c *call) senderVisible() bool {
	if c.key.identity != "" || c.serverReply() {
		return false
	}
	_, ok := probeBeside(c.reply)
	return ok
}

// probeBeside is the subject of a sender probe for a reply subject: the
// reply's last token replaced. ok is false for a reply of fewer than
// three tokens, whose prefix is no request inbox.
func probeBeside(reply string) (string, bool) {
	last := strings.LastIndexByte(reply, '.')
	if last <= 0 || strings.IndexByte(reply[:last], '.') < 0 {
		return "", false
	}
	s := reply[:last+1] + senderProbeToken
	if s == reply {
		s += "2"
	}
	return s, true
}

// mayWait is asked before c waits for room: a leased call may; an
// unleased one may only when its sender's leaving can be seen, and is
// then checked before it starts (checkSender). A refused wait is
// remembered, so the call's Problem says why.
func (c *call) mayWait() bool {
	if c.leased() {
		return true
	}
	if c.senderVisible() {
		c.waited = true
		return true
	}
	c.waitRefused = true
	return false
}

// mustNotWait is the Problem of an unleased call refused a wait.
func (c *call) mustNotWait() *envelope.Problem {
	return c.w.problems.New(envelope.CodeOverloaded, fmt.Sprintf(
		"worker %s has no room free for tool %s, and a call without %s= from another account (or without a request inbox) does not wait for room: this worker could not see its sender leave; the handler did not run",
		c.w.cfg.ID, c.tool.spec.Name, wire.MetaCaller)).
		WithRetryAfter(c.w.cfg.Limits.OverloadRetryAfter.Seconds()).
		WithFix(fmt.Sprintf("Retry after retry_after, or send %s= in the call's metadata line and prove the caller alive (docs/protocol.md §8.3) to wait in the queue.", wire.MetaCaller), envelope.MaybeIncorrect)
}

// checkSender is the Problem (nil: start it) of an unleased call that
// waited for room, once it has room: a call whose sender has left does
// not start. Any doubt — the probe not sent, the round trip failed, the
// server refused the worker's probe subscription — starts the call.
func (c *call) checkSender(ctx context.Context) *envelope.Problem {
	if !c.waited || c.leased() {
		return nil
	}
	if !c.w.senders.gone(ctx, c.w, c.reply) {
		if ctx.Err() != nil { // ended while the probe was out: not started
			return c.contextProblem(ctx)
		}
		return nil
	}
	return c.w.problems.New(envelope.CodeCancelled, fmt.Sprintf(
		"worker %s found nobody holding the call's reply inbox any more once the call had room: its sender left while it waited; the handler did not run",
		c.w.cfg.ID))
}

// senderProbes sends sender probes and collects the server's answers.
// Answers come on <ctl>.<worker-id>.sender.<n> (a subscription made on
// first use), into a channel nats.go fills as it reads them, so a 503 is
// in it by the time the round trip after its probe returns.
type senderProbes struct {
	mu      sync.Mutex
	sub     *nats.Subscription
	answers chan *nats.Msg
	next    uint64
	pending map[string]bool // probe token → the server answered 503
}

// senderProbeAnswers bounds the answers waiting to be collected: past
// it nats.go drops them, and a dropped 503 only lets a call start.
const senderProbeAnswers = 1024

// gone reports whether the server answered a probe beside reply with 503.
func (p *senderProbes) gone(ctx context.Context, w *Worker, reply string) bool {
	subject, _ := probeBeside(reply)
	tok, answerTo, ok := p.open(w)
	if !ok {
		return false
	}
	if err := w.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: answerTo}); err != nil {
		p.close(tok)
		return false
	}
	fctx, cancel := context.WithTimeout(ctx, w.confirmTimeout)
	defer cancel()
	if err := w.nc.FlushWithContext(fctx); err != nil {
		p.close(tok)
		return false
	}
	return p.close(tok)
}

// open registers a probe: its token and the subject its answer comes on,
// subscribing on first use; ok is false when no probe can be made.
func (p *senderProbes) open(w *Worker) (tok, answerTo string, ok bool) {
	base := w.subjects.Control(w.cfg.ID) + ".sender."
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sub == nil {
		if w.stopCtx.Err() != nil {
			return "", "", false
		}
		ch := make(chan *nats.Msg, senderProbeAnswers)
		sub, err := w.nc.ChanSubscribe(base+"*", ch)
		if err != nil {
			return "", "", false
		}
		w.mu.Lock()
		w.ctlSubs = append(w.ctlSubs, sub) // unsubscribed when the worker stops
		w.mu.Unlock()
		p.sub, p.answers, p.pending = sub, ch, map[string]bool{}
	}
	p.next++
	tok = strconv.FormatUint(p.next, 36)
	p.pending[tok] = false
	return tok, base + tok, true
}

// close forgets the probe tok and reports whether the server answered it
// with 503, collecting every answer that arrived meanwhile, others'
// included.
func (p *senderProbes) close(tok string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for drained := false; !drained; {
		select {
		case m := <-p.answers:
			p.recordLocked(m)
		default:
			drained = true
		}
	}
	gone := p.pending[tok]
	delete(p.pending, tok)
	return gone
}

// recordLocked notes the server's 503 to an open probe. An answer stamped
// with an identity came through a service import: another account
// forging "no responders"; it is ignored, as is one for a probe no longer
// open.
func (p *senderProbes) recordLocked(m *nats.Msg) {
	t := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if _, open := p.pending[t]; open && wire.Header(m.Header, "Status") == "503" && wire.Identity(m.Header) == "" {
		p.pending[t] = true
	}
}
