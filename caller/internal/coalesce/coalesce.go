package coalesce

import (
	"sync"
	"sync/atomic"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// Bounds of coalescing. A batch goes to one worker of the tool's queue
// group, so its size is what a worker can be handed at once: small
// batches keep load sharing among a tool's workers fair.
const (
	// MaxBatch is the most calls one batch message carries.
	MaxBatch = 8
	// MaxSenders bounds the tools with a sender of their own; calls to
	// further tools are published on their own.
	MaxSenders = 1024
	// HandoffRounds is how many rounds of queued calls a caller's
	// goroutine sends before it hands the rest to a goroutine of their
	// own and goes to wait for its own call's reply.
	HandoffRounds = 2
	// LineRoom is the room kept free in a batch message for its line (at
	// most 12 bytes and 8 per call).
	LineRoom = 16 + 8*MaxBatch
)

// Call is one encoded call waiting for its tool's publish in progress.
type Call[P any] struct {
	P     P      // the caller's own record of the call
	Reply string // the call's own reply subject
	Body  []byte
}

// Link is what a Sender needs of its caller to send queued calls.
type Link[P any] interface {
	// Publish publishes one message: a lone call, or a batch.
	Publish(subject, reply string, body []byte) error
	// Limits are the room for calls in one message (the server's
	// max_payload less LineRoom), and how many workers not known gone
	// were heard lately on the tool of call p.
	Limits(p P) (room, hosts int)
	// Register registers calls to go out as one batch, so that their
	// replies find them: it keeps, in calls' order and in its room, the
	// calls still in flight (one abandoned while it waited is not sent)
	// and returns them with the batch's reply subject.
	Register(calls []Call[P]) (kept []Call[P], reply string)
	// Failed ends call p, which could not be sent, with err.
	Failed(p P, err error)
}

// Senders holds each tool's Sender, up to MaxSenders of them, and counts
// the batches they sent.
type Senders[P any] struct {
	m sync.Map // tool → *Sender[P]
	n atomic.Int32
	// batches and batched count batch messages sent and their calls.
	batches, batched atomic.Int64
}

// Get returns tool's Sender, or nil when it has none yet.
func (ss *Senders[P]) Get(tool string) *Sender[P] {
	if s, ok := ss.m.Load(tool); ok {
		return s.(*Sender[P])
	}
	return nil
}

// Add returns tool's Sender, making it, publishing to subject(tool),
// when it has none; nil when there are MaxSenders of them already.
func (ss *Senders[P]) Add(tool string, subject func(tool string) string) *Sender[P] {
	if ss.n.Add(1) > MaxSenders {
		ss.n.Add(-1)
		return nil
	}
	s, loaded := ss.m.LoadOrStore(tool, &Sender[P]{Subject: subject(tool), stats: ss})
	if loaded {
		ss.n.Add(-1)
	}
	return s.(*Sender[P])
}

// Stats returns how many batch messages were sent (each carrying 2 or
// more calls), and how many calls they carried.
func (ss *Senders[P]) Stats() (batches, calls int64) {
	return ss.batches.Load(), ss.batched.Load()
}

// Sender is one tool's combining publisher: at most one publish to the
// tool is in progress (busy); calls made meanwhile wait in queue.
type Sender[P any] struct {
	Subject string // the tool's call subject
	stats   *Senders[P]
	mu      sync.Mutex
	busy    bool
	queue   []Call[P]
	spare   []Call[P] // the last queue sent, emptied, for reuse
}

// Acquire makes s busy and reports true when no publish to the tool is
// in progress: the calling goroutine then publishes its call itself and
// calls Drain. Otherwise call queues behind the publish in progress and
// goes out in the round of the goroutine that is publishing.
func (s *Sender[P]) Acquire(call Call[P]) bool {
	s.mu.Lock()
	if s.busy {
		s.queue = append(s.queue, call)
		s.mu.Unlock()
		return false
	}
	s.busy = true
	s.mu.Unlock()
	return true
}

// Queued is how many calls wait in s's queue.
func (s *Sender[P]) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Drain sends s's queued calls through l until none is left, then marks
// s idle. After rounds rounds (0: no limit) it hands the rest to a
// goroutine of their own, so that a caller's goroutine never spends long
// sending other calls while its own reply waits.
func (s *Sender[P]) Drain(l Link[P], rounds int) {
	var done []Call[P]
	for round := 1; ; round++ {
		s.mu.Lock()
		if done != nil {
			clear(done)
			s.spare = done[:0]
		}
		switch {
		case len(s.queue) == 0:
			s.busy = false
			s.mu.Unlock()
			return
		case rounds > 0 && round > rounds:
			s.mu.Unlock()
			go s.Drain(l, 0) // s stays busy: calls go on queueing for it
			return
		}
		q := s.queue
		s.queue, s.spare = s.spare, nil
		s.mu.Unlock()
		s.sendRound(l, q)
		done = q
	}
}

// sendRound sends one round of queued calls in messages of at most
// BatchCap calls and the room l gives; a lone call goes out as itself.
func (s *Sender[P]) sendRound(l Link[P], q []Call[P]) {
	room, hosts := l.Limits(q[0].P)
	limit := BatchCap(len(q), hosts)
	for len(q) > 0 {
		n, size := Pack(q, limit, room)
		if n == 1 {
			if err := l.Publish(s.Subject, q[0].Reply, q[0].Body); err != nil {
				l.Failed(q[0].P, err)
			}
		} else {
			s.sendBatch(l, q[:n], size)
		}
		q = q[n:]
	}
}

// Pack is how many calls from the head of q go out in the next message,
// at least one and at most limit, their bodies within room; and the size
// of those bodies.
func Pack[P any](q []Call[P], limit, room int) (n, size int) {
	n, size = 1, len(q[0].Body)
	for n < len(q) && n < limit && size+len(q[n].Body) <= room {
		size += len(q[n].Body)
		n++
	}
	return n, size
}

// BatchCap is the most calls one message may carry of queued calls to a
// tool that hosts workers were heard on lately: MaxBatch, but no more
// than an even share of the queue per worker. NATS hands each message to
// one worker of the queue group, so a queue no longer than the fleet goes
// out a call a message, spread as uncoalesced calls would be, and a
// longer one in as many batches as there are workers at least: coalescing
// never piles a fleet's calls on a few of its workers.
func BatchCap(queued, hosts int) int {
	if hosts <= 1 {
		return MaxBatch
	}
	return min(MaxBatch, max(1, (queued+hosts-1)/hosts))
}

// sendBatch sends calls, whose bodies are size bytes, as one batch
// message on a reply subject of its own, registered first so that its
// replies (or a no-responders answer) find the calls.
func (s *Sender[P]) sendBatch(l Link[P], calls []Call[P], size int) {
	kept, reply := l.Register(calls)
	if len(kept) == 0 {
		return
	}
	sizes := make([]int, len(kept))
	for i, e := range kept {
		sizes[i] = len(e.Body)
	}
	msg := wire.AppendBatchHead(make([]byte, 0, LineRoom+size), sizes)
	for _, e := range kept {
		msg = append(msg, e.Body...)
	}
	if err := l.Publish(s.Subject, reply, msg); err != nil {
		for _, e := range kept {
			l.Failed(e.P, err)
		}
		return
	}
	s.stats.batches.Add(1)
	s.stats.batched.Add(int64(len(kept)))
}
