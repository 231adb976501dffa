package tasks

import (
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fairQueue is where an instance holds the queued calls it has taken from
// the stream until it runs them: per owner, in arrival order, run round
// robin across owners, each owner's running tasks bounded per tool and
// overall (§22.6 *Fair per owner*). One owner's flood so takes at most
// its share of this instance's runners and of the workers' per-sender
// share, and never stands in front of another owner's tasks.
type fairQueue struct {
	owners map[string]*ownerQueue
	ring   []string // owners with held or running tasks, in round-robin order
	next   int      // where the next round starts in ring
}

// ownerQueue is one owner's held and running tasks on this instance.
type ownerQueue struct {
	held    []heldCall
	running int
	byTool  map[string]int
}

// heldCall is a queued call held until the owner's turn.
type heldCall struct {
	m    jetstream.Msg
	tool string
}

// take holds a delivered queued call for its owner's turn, or hands it
// back to the stream for later when the owner already has enough held
// here; then runs whatever may run.
func (s *Service) take(m jetstream.Msg) {
	q, ok := s.queuedOn(m.Subject())
	if !ok {
		_ = m.Term()
		return
	}
	s.mu.Lock()
	o := s.fair.owners[q.Owner]
	if o == nil {
		o = &ownerQueue{byTool: map[string]int{}}
		s.fair.owners[q.Owner] = o
		s.fair.ring = append(s.fair.ring, q.Owner)
	}
	if len(o.held) >= s.cfg.MaxRunningPerOwner || o.heldOf(q.Tool) >= s.cfg.MaxRunningPerOwnerTool {
		s.mu.Unlock()
		_ = m.NakWithDelay(later(m))
		return
	}
	o.held = append(o.held, heldCall{m: m, tool: q.Tool})
	s.mu.Unlock()
	s.dispatch()
}

// queuedOn reads the owner and tool of a submit entry from its subject,
// <base>.log.<owner>.<id>.q.<tool>.
func (s *Service) queuedOn(subject string) (q struct{ Owner, Tool string }, ok bool) {
	rest, ok := strings.CutPrefix(subject, s.names.base+".log.")
	if !ok {
		return q, false
	}
	owner, rest, _ := strings.Cut(rest, ".")
	_, tool, ok := strings.Cut(rest, ".q.")
	q.Owner, q.Tool = owner, tool
	return q, ok && owner != "" && tool != ""
}

// heldOf counts the calls of tool held.
func (o *ownerQueue) heldOf(tool string) int {
	n := 0
	for _, h := range o.held {
		if h.tool == tool {
			n++
		}
	}
	return n
}

// later is how long a call handed back for its owner's turn stays away:
// 250 ms, doubling with each delivery, up to 5 s.
func later(m jetstream.Msg) time.Duration {
	n := uint64(1)
	if md, err := m.Metadata(); err == nil {
		n = md.NumDelivered
	}
	return min(250*time.Millisecond<<min(n-1, 5), 5*time.Second)
}

// dispatch runs held calls, one owner at a time round robin, while the
// owners' bounds allow.
func (s *Service) dispatch() {
	for s.ctx.Err() == nil {
		s.mu.Lock()
		h, owner, ok := s.pickLocked()
		s.mu.Unlock()
		if !ok {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done() // last: no run starts after Close's wait
			s.handle(h.m)
			s.release(owner, h.tool)
			s.dispatch()
		}()
	}
}

// pickLocked takes the next call to run: from the first owner, from the
// round's start on, that holds one whose tool is under the owner's
// bounds. s.mu must be held.
func (s *Service) pickLocked() (heldCall, string, bool) {
	f := &s.fair
	for i := range len(f.ring) {
		k := (f.next + i) % len(f.ring)
		owner := f.ring[k]
		o := f.owners[owner]
		if o.running >= s.cfg.MaxRunningPerOwner {
			continue
		}
		for j, h := range o.held {
			if o.byTool[h.tool] >= s.cfg.MaxRunningPerOwnerTool {
				continue
			}
			o.held = append(o.held[:j], o.held[j+1:]...)
			o.running++
			o.byTool[h.tool]++
			f.next = k + 1
			return h, owner, true
		}
	}
	return heldCall{}, "", false
}

// release counts a run as ended and forgets an owner with nothing left.
func (s *Service) release(owner, tool string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.fair
	o := f.owners[owner]
	o.running--
	if o.byTool[tool]--; o.byTool[tool] <= 0 {
		delete(o.byTool, tool)
	}
	if o.running > 0 || len(o.held) > 0 {
		return
	}
	delete(f.owners, owner)
	for i, name := range f.ring {
		if name == owner {
			f.ring = append(f.ring[:i], f.ring[i+1:]...)
			if f.next > i {
				f.next--
			}
			break
		}
	}
}

// keepHeld proves to the stream, every third of the ack wait, that the calls held
// for their owners' turn are being worked on; on Close it hands them back.
func (s *Service) keepHeld() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ackWait / 3)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			for _, m := range s.heldCalls() {
				_ = m.Nak()
			}
			return
		case <-t.C:
			for _, m := range s.heldCalls() {
				_ = m.InProgress()
			}
		}
	}
}

// heldCalls lists the calls held for their owners' turn.
func (s *Service) heldCalls() []jetstream.Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jetstream.Msg
	for _, o := range s.fair.owners {
		for _, h := range o.held {
			out = append(out, h.m)
		}
	}
	return out
}
