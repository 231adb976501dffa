package tasks

import (
	"github.com/nats-io/nats.go"
)

// wakers are the waits on tasks' changes in this instance (get with wait,
// submit with wait, cancel), all woken through one subscription to
// <p>.tasks.done.> rather than a subscription per wait: a subscription
// costs the server a sublist change, and nats.go a buffer, every time.
type wakers struct {
	waits map[string]map[chan struct{}]struct{} // done subject → its waiters (Service.mu)
}

// awaitChange registers a wait for the next change of the task whose done
// subject is subject; stop ends it. A change that comes before the wait
// reads the task is not missed: register first, then read.
func (s *Service) awaitChange(subject string) (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	set := s.wake.waits[subject]
	if set == nil {
		set = map[chan struct{}]struct{}{}
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

// onDone wakes every wait on the task that changed.
func (s *Service) onDone(m *nats.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.wake.waits[m.Subject] {
		select {
		case ch <- struct{}{}:
		default: // already woken: it reads the task again anyway
		}
	}
}
