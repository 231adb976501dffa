package fairshare

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// waiting counts the calls waiting, for tests to line waiters up.
func (s *Semaphore) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.queue {
		n += len(q)
	}
	return n
}

// queueUp starts an Acquire for sender and waits until it is queued; the
// returned channel yields the sender once the slot is granted.
func queueUp(t *testing.T, s *Semaphore, sender string, granted chan<- string) {
	t.Helper()
	before := s.waiting()
	go func() {
		if err := s.Acquire(context.Background(), sender, nil); err != nil {
			t.Error(err)
			return
		}
		granted <- sender
	}()
	for s.waiting() == before {
		runtime.Gosched()
	}
}

// TestTurnsBySender: bob queues three calls before alice queues one; the
// slots freed next go bob, alice, bob, bob — alice waits one turn, not
// behind all of bob's calls.
func TestTurnsBySender(t *testing.T) {
	s := New(1, 10)
	if err := s.Acquire(context.Background(), "carol", nil); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 4)
	for _, who := range []string{"bob", "bob", "bob", "alice"} {
		queueUp(t, s, who, granted)
	}
	var order []string
	for range 4 {
		s.Release()
		order = append(order, <-granted)
	}
	want := []string{"bob", "alice", "bob", "bob"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("slots went to %v, want %v", order, want)
		}
	}
}

// TestQueueBoundPerSender: a sender with its bound waiting is refused at
// once; another sender still queues.
func TestQueueBoundPerSender(t *testing.T) {
	s := New(1, 2)
	if err := s.Acquire(context.Background(), "x", nil); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 3)
	queueUp(t, s, "bob", granted)
	queueUp(t, s, "bob", granted)
	if err := s.Acquire(context.Background(), "bob", nil); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("bob's third waiting call: %v, want ErrQueueFull", err)
	}
	queueUp(t, s, "alice", granted)
}

// TestGiveUpPassesTheSlotOn: a waiter whose context ends leaves the queue,
// and a slot granted to it as it gave up goes to the next in turn.
func TestGiveUpPassesTheSlotOn(t *testing.T) {
	s := New(1, 4)
	if err := s.Acquire(context.Background(), "x", nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- s.Acquire(ctx, "quitter", nil) }()
	for s.waiting() == 0 {
		runtime.Gosched()
	}
	granted := make(chan string, 1)
	queueUp(t, s, "stayer", granted)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("quitter: %v, want context.Canceled", err)
	}
	s.Release()
	if who := <-granted; who != "stayer" {
		t.Fatalf("slot went to %s", who)
	}
	s.Release()
	if err := s.Acquire(context.Background(), "y", nil); err != nil {
		t.Fatalf("the slot was not given back: %v", err)
	}
}

// TestMayWait: a free slot is taken without asking mayWait; with none
// free, a call mayWait refuses gets ErrMustNotWait at once and queues
// nothing, and one it allows waits as any other.
func TestMayWait(t *testing.T) {
	s := New(1, 2)
	asked := 0
	ask := func(answer bool) func() bool { return func() bool { asked++; return answer } }
	if err := s.Acquire(context.Background(), "x", ask(false)); err != nil || asked != 0 {
		t.Fatalf("free slot: err %v, mayWait asked %d times, want nil and 0", err, asked)
	}
	if err := s.Acquire(context.Background(), "bob", ask(false)); !errors.Is(err, ErrMustNotWait) || asked != 1 {
		t.Fatalf("no free slot, may not wait: err %v (asked %d), want ErrMustNotWait", err, asked)
	}
	granted := make(chan string, 1)
	before := s.waiting()
	go func() {
		if s.Acquire(context.Background(), "alice", ask(true)) == nil {
			granted <- "alice"
		}
	}()
	for s.waiting() == before {
		runtime.Gosched()
	}
	s.Release()
	if who := <-granted; who != "alice" {
		t.Fatalf("slot went to %q", who)
	}
	if n := len(s.queue["bob"]); n != 0 {
		t.Fatalf("bob's refused call left %d waiters queued", n)
	}
}
