package worker

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
)

// peer is one caller (identity, caller id) with calls running here.
// Liveness is per peer, not per call (protocol v2, §8): one heartbeat per
// peer per interval names all of its calls, and one lease per peer
// decides whether its calls live on — heartbeats cost O(callers), not
// O(calls), while a lost caller still loses exactly its own calls.
type peer struct {
	key      callKey
	interval time.Duration
	calls    map[*call]struct{}
	latest   *call     // the most recent call: its reply subject carries the beats
	seen     time.Time // the last word from the caller: a call or an alive message
	asked    time.Time // when the caller last asked for a beat now (wire.OpBeat)
	timer    *time.Timer
}

// maxControlBytes is the largest control message decoded: a real one is
// under 200 bytes.
const maxControlBytes = 1024

// maxControlPending and maxControlPendingBytes bound the control messages
// (cancel, credit, alive, beat) and probe answers waiting unread: every
// caller — every tenant, under deploy/secure — may publish on the control
// subject, so a flood of them is dropped past these rather than growing
// the worker's memory (docs/protocol.md §9).
const (
	maxControlPending      = 4096
	maxControlPendingBytes = 4 << 20
)

// callKey names a call (or a caller) as seen by one identity: the
// identity the NATS server vouches for (wire.Identity) and the id the
// caller chose.
type callKey struct {
	identity, id string
}

// replyKeepalive is how long a call whose reply subject the server made
// (it crossed an account boundary) may go without a message on that
// subject. The server forgets such a mapping after its response threshold
// (deploy/secure: 2 minutes) without traffic, and a heartbeat to the
// caller travels on only one of its calls' subjects.
const replyKeepalive = wire.MaxHeartbeat

// track makes c findable by control messages and stop, and enrols it with
// its peer; it reports false when a call with the same key is already in
// flight (control messages find calls by id, so two may not share one).
func (w *Worker) track(c *call) bool {
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	if _, dup := w.calls[c.key]; dup {
		return false
	}
	w.calls[c.key] = c
	c.tracked = true
	if c.callerID == "" || !c.repliesToCaller() {
		return true
	}
	k := c.callerKey()
	p := w.peers[k]
	if p == nil {
		p = &peer{key: k, calls: map[*call]struct{}{}, seen: c.started, interval: c.interval}
		p.timer = time.AfterFunc(c.interval, func() { w.beat(p) })
		w.peers[k] = p
	}
	p.calls[c] = struct{}{}
	p.latest, p.interval = c, c.interval
	if c.started.After(p.seen) {
		p.seen = c.started // a caller sending calls is alive
	}
	return true
}

// repliesToCaller reports whether c's reply subject can be its caller's:
// <inbox>.<caller-id>.<token>, or one the server made across an account
// boundary (whose identity is then part of the peer's key). A call naming
// a caller id its reply subject does not carry gets no peer: it may not
// take over that caller's heartbeats and probes, nor end its calls.
func (c *call) repliesToCaller() bool {
	if c.serverReply() {
		return true
	}
	r := c.reply
	last := strings.LastIndexByte(r, '.')
	if last < 0 {
		return false
	}
	r = r[:last]
	return strings.HasSuffix(r, c.callerID) && (len(r) == len(c.callerID) || r[len(r)-len(c.callerID)-1] == '.')
}

// untrack forgets c. It runs before c's terminal goes out, so no heartbeat sent after
// the terminal can name the call.
func (w *Worker) untrack(c *call) {
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	if !c.tracked {
		return
	}
	c.tracked = false
	delete(w.calls, c.key)
	p := w.peers[c.callerKey()]
	if p == nil {
		return
	}
	delete(p.calls, c)
	// A peer without calls lingers until its next beat, which forgets it:
	// a caller whose calls come one at a time keeps one peer, not one per call.
	if p.latest == c {
		p.latest = mostRecent(p.calls)
		if p.latest != nil {
			p.interval = p.latest.interval
		}
	}
}

// mostRecent is the call of calls received last (nil for none): the one
// whose reply subject carries the peer's beats and whose interval they
// keep (§8.1), so the caller judges silence by what it asked for last.
func mostRecent(calls map[*call]struct{}) *call {
	var latest *call
	for c := range calls {
		if latest == nil || c.started.After(latest.started) {
			latest = c
		}
	}
	return latest
}

// beat sends p's heartbeat, keeps server-made reply mappings alive, and
// checks p's lease: a caller silent for 3 intervals is suspect.
func (w *Worker) beat(p *peer) {
	w.callsMu.Lock()
	if len(p.calls) == 0 {
		delete(w.peers, p.key)
		w.callsMu.Unlock()
		return
	}
	now := time.Now()
	// Sent under callsMu: untrack (which precedes every terminal) waits,
	// so a beat never names a call whose terminal is already out.
	w.announcer.confirm(w.sendBeats(p))
	if p.key.identity != "" {
		w.keepRepliesAlive(p, now)
	}
	suspect := now.Sub(p.seen) > wire.MissedBeats*p.interval
	latest := p.latest
	p.timer.Reset(p.interval)
	w.callsMu.Unlock()
	if suspect {
		w.suspectCaller(latest)
	}
}

// sendBeats publishes p's heartbeat on its latest call's reply subject:
// one message naming every call of p, or several when the ids outgrow one
// message. It returns the calls named that no confirmed heartbeat had
// named yet (see announcer). callsMu must be held.
func (w *Worker) sendBeats(p *peer) []*call {
	limit := w.piece()
	head := wire.AppendBeatHead(nil, w.cfg.ID, p.interval.Milliseconds())
	buf := append(make([]byte, 0, len(head)+len(p.calls)*27), head...)
	var fresh []*call
	for c := range p.calls {
		if len(buf)+len(c.key.id)+1 > limit {
			w.publishBeat(p.latest, buf)
			buf = append(buf[:0], head...)
		}
		buf = append(append(buf, c.key.id...), ' ')
		if c.namedAt.Load() == 0 {
			fresh = append(fresh, c)
		}
	}
	w.publishBeat(p.latest, buf)
	return fresh
}

// keepRepliesAlive beats, on its own subject, each call of p whose
// server-made reply subject has carried nothing for replyKeepalive.
// callsMu must be held.
func (w *Worker) keepRepliesAlive(p *peer, now time.Time) {
	for c := range p.calls {
		if c == p.latest || !strings.HasPrefix(c.reply, serverReplyPrefix) || now.Sub(c.lastSent()) < replyKeepalive {
			continue
		}
		b := wire.AppendBeatHead(nil, w.cfg.ID, p.interval.Milliseconds())
		w.publishBeat(c, append(b, c.key.id...))
	}
}

func (w *Worker) publishBeat(c *call, body []byte) {
	c.markSent()
	if err := w.nc.Publish(c.reply, body); err != nil {
		w.log.Debug("heartbeat not sent", "caller_id", c.callerID, "err", err)
	}
}

// beatNow sends caller k's heartbeat at once when it asks (wire.OpBeat,
// protocol v2 §8.2): a caller about to judge this worker silent hears
// from it first. At most one per half interval per caller, and only to a
// caller with calls here, so asking cannot make the worker flood anyone.
func (w *Worker) beatNow(k callKey) {
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	p := w.peers[k]
	now := time.Now()
	if p == nil || len(p.calls) == 0 || p.latest == nil || now.Sub(p.asked) < p.interval/2 {
		return
	}
	p.asked = now
	w.announcer.confirm(w.sendBeats(p))
}

// heard renews the lease of caller k on an alive message; a caller with
// nothing running here is ignored, so made-up caller ids cost nothing.
func (w *Worker) heard(k callKey) {
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	p := w.peers[k]
	if p == nil {
		return
	}
	p.seen = time.Now()
	w.answerProbeLocked(k, true)
}

// lastSent is when c's reply subject last carried a message.
func (c *call) lastSent() time.Time { return time.Unix(0, c.sentAt.Load()) }

// markSent records that c's reply subject carries a message now.
func (c *call) markSent() { c.sentAt.Store(time.Now().UnixNano()) }

// sentClock is the type of call.sentAt: unix nanoseconds, atomic so that
// heartbeats read it without the call's lock.
type sentClock = atomic.Int64

// probeMsg is the liveness probe sent to a suspect caller (see suspectCaller).
func (w *Worker) probeMsg(c *call) *nats.Msg {
	inbox := c.reply[:strings.LastIndexByte(c.reply, '.')+1]
	return &nats.Msg{Subject: inbox + wire.ProbeToken, Reply: w.subjects.Control(w.cfg.ID) + "." + c.callerID,
		Data: wire.AppendBeatHead(nil, w.cfg.ID, c.interval.Milliseconds())}
}
