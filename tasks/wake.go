package tasks

import (
	"github.com/nats-io/nats.go"
)

// wakers are the waits on tasks' changes in this instance (get with wait,
// submit with wait, cancel), all woken through one subscription to
// <p>.tasks.done.> rather than a subscription per wait: a subscription
// costs the server a sublist change, and nats.go a buffer, every time.
// A notice carries the task's record as it changed, so that a wait for a
// task's end needs no read of the stream.
type wakers struct {
	waits map[string]map[chan notice]struct{} // done subject → its waiters (Service.mu)
}

// notice is what a wait is woken with: the task's record as it changed
// (nil when unknown: read the task), and whether that record is the
// final one with its terminal inline, to be answered as it is.
type notice struct {
	record []byte
	final  bool
}

// Notice headers of <p>.tasks.done.<owner>.<id>.
const (
	// hdrNotice says what changed: noticeChanged, noticeEnded or
	// noticeFinal; a notice without the header wakes as a change.
	hdrNotice = "Toolmesh-Task-Notice"
	// hdrInstance names the instance that sent the notice.
	hdrInstance = "Toolmesh-Task-Instance"
	// hdrTool names the task's tool, so that counting needs no decoding.
	hdrTool       = "Toolmesh-Task-Tool"
	noticeChanged = "changed"
	// noticeEnded is the notice of a task's end; its record is final.
	noticeEnded = "ended"
	// noticeFinal is the notice of a task's end whose record carries the
	// terminal inline: a wait answers it as it is.
	noticeFinal = "final"
)

// awaitChange registers a wait for the next change of the task whose done
// subject is subject; stop ends it. A change that comes before the wait
// reads the task is not missed: register first, then read. The channel
// carries the notice's record (empty when the notice had none).
func (s *Service) awaitChange(subject string) (changed <-chan notice, stop func()) {
	ch := make(chan notice, 1)
	s.mu.Lock()
	set := s.wake.waits[subject]
	if set == nil {
		set = map[chan notice]struct{}{}
		s.wake.waits[subject] = set
	}
	set[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(set, ch)
		if cur := s.wake.waits[subject]; cur != nil && len(cur) == 0 {
			delete(s.wake.waits, subject)
		}
		s.mu.Unlock()
	}
}

// onDone uncounts a task that ended and wakes every wait on a task that
// changed; this instance's own notices woke its waits when they were sent.
func (s *Service) onDone(m *nats.Msg) {
	s.countNotice(m)
	if m.Header.Get(hdrInstance) == s.instance {
		return
	}
	s.wakeWaits(m.Subject, notice{record: m.Data, final: m.Header.Get(hdrNotice) == noticeFinal})
}

// wakeWaits hands every wait on the task whose done subject is subject
// the notice n.
func (s *Service) wakeWaits(subject string, data notice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.wake.waits[subject] {
		select {
		case ch <- data:
		default: // already woken and not yet read: the newer record replaces it
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- data:
			default:
			}
		}
	}
}

// wakeOnReconnect wakes every wait each time the connection comes back:
// a change announced while it was away (by another instance) was not
// heard, so each wait reads its task again.
func (s *Service) wakeOnReconnect() {
	ch := s.nc.StatusChanged(nats.CONNECTED)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.nc.RemoveStatusListener(ch)
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-ch:
				s.wakeAll()
			}
		}
	}()
}

// wakeAll wakes every wait of this instance, with no record: each reads
// its task again.
func (s *Service) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, set := range s.wake.waits {
		for ch := range set {
			select {
			case ch <- notice{}:
			default:
			}
		}
	}
}
