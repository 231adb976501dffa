package fairshare

import (
	"context"
	"errors"
	"sync"
)

// ErrQueueFull is Acquire's answer when the sender already has its
// bound of calls waiting.
var ErrQueueFull = errors.New("fairshare: this sender's queue is full")

// ErrMustNotWait is Acquire's answer when no slot is free and the
// caller's mayWait said the call must not wait for one.
var ErrMustNotWait = errors.New("fairshare: no slot is free and this call may not wait for one")

// Semaphore hands out a fixed number of slots, fairly across senders.
type Semaphore struct {
	perSender int

	mu    sync.Mutex
	free  int
	ring  []string             // senders with waiters, in turn order
	queue map[string][]*waiter // each sender's waiters, oldest first
}

// waiter is one Acquire waiting for a slot; ready is closed when it is
// granted one.
type waiter struct {
	ready   chan struct{}
	granted bool
}

// New returns a Semaphore of slots slots (at least 1) whose senders may
// each have at most perSender calls waiting (at least 1).
func New(slots, perSender int) *Semaphore {
	return &Semaphore{perSender: max(perSender, 1), free: max(slots, 1), queue: map[string][]*waiter{}}
}

// Acquire takes a slot for sender, waiting in the sender's turn while none
// is free. It returns ErrQueueFull at once when sender already has its
// bound waiting, and ctx's error when ctx ends first. Before the call
// waits, mayWait (when not nil) is asked whether it may; false answers
// ErrMustNotWait at once (it runs under the semaphore's lock and must not
// block). Each nil answer must be matched by one Release.
func (s *Semaphore) Acquire(ctx context.Context, sender string, mayWait func() bool) error {
	s.mu.Lock()
	if s.free > 0 && len(s.ring) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	q := s.queue[sender]
	if len(q) >= s.perSender {
		s.mu.Unlock()
		return ErrQueueFull
	}
	if mayWait != nil && !mayWait() {
		s.mu.Unlock()
		return ErrMustNotWait
	}
	w := &waiter{ready: make(chan struct{})}
	if len(q) == 0 {
		s.ring = append(s.ring, sender)
	}
	s.queue[sender] = append(q, w)
	s.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.granted { // granted meanwhile: pass the slot on
			s.grantLocked()
			return ctx.Err()
		}
		s.removeLocked(sender, w)
		return ctx.Err()
	}
}

// Release returns a slot, handing it to the next sender in turn.
func (s *Semaphore) Release() {
	s.mu.Lock()
	s.grantLocked()
	s.mu.Unlock()
}

// grantLocked gives one slot to the oldest waiter of the sender whose turn
// it is, moving that sender to the end of the turn order; with nobody
// waiting the slot becomes free.
func (s *Semaphore) grantLocked() {
	if len(s.ring) == 0 {
		s.free++
		return
	}
	sender := s.ring[0]
	s.ring = s.ring[1:]
	q := s.queue[sender]
	w := q[0]
	if len(q) == 1 {
		delete(s.queue, sender)
	} else {
		s.queue[sender] = q[1:]
		s.ring = append(s.ring, sender)
	}
	w.granted = true
	close(w.ready)
}

// removeLocked takes a waiter that gave up out of its sender's queue.
func (s *Semaphore) removeLocked(sender string, w *waiter) {
	q := s.queue[sender]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		s.queue[sender] = q
		return
	}
	delete(s.queue, sender)
	for i, x := range s.ring {
		if x == sender {
			s.ring = append(s.ring[:i:i], s.ring[i+1:]...)
			break
		}
	}
}
