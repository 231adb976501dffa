package coalesce

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// A batch carries no more than an even share of the queue per worker
// heard on the tool, and never more than MaxBatch: a fleet keeps its
// spread.
func TestBatchCapKeepsAFleetsSpread(t *testing.T) {
	for _, tc := range []struct{ queued, hosts, want int }{
		{queued: 20, hosts: 0, want: MaxBatch}, // no worker heard yet
		{queued: 20, hosts: 1, want: MaxBatch},
		{queued: 8, hosts: 8, want: 1}, // a queue no longer than the fleet: a call a message
		{queued: 3, hosts: 8, want: 1},
		{queued: 9, hosts: 8, want: 2},
		{queued: 24, hosts: 4, want: 6},
		{queued: 200, hosts: 8, want: MaxBatch},
		{queued: 1, hosts: 2, want: 1},
	} {
		if got := BatchCap(tc.queued, tc.hosts); got != tc.want {
			t.Errorf("BatchCap(%d queued, %d workers) = %d, want %d", tc.queued, tc.hosts, got, tc.want)
		}
	}
}

// Pack takes calls while they fit the limit and the room, and always
// at least one, however large.
func TestPack(t *testing.T) {
	q := calls(10, 20, 30, 40)
	for _, tc := range []struct{ limit, room, n, size int }{
		{8, 1000, 4, 100},
		{2, 1000, 2, 30},
		{8, 60, 3, 60},
		{8, 59, 2, 30},
		{8, 5, 1, 10}, // too large for the room: goes alone
	} {
		if n, size := Pack(q, tc.limit, tc.room); n != tc.n || size != tc.size {
			t.Errorf("Pack(limit %d, room %d) = %d calls, %d bytes; want %d, %d", tc.limit, tc.room, n, size, tc.n, tc.size)
		}
	}
}

// Calls made while a publish is in progress queue, and Drain sends them
// in one batch message whose calls are the queued bodies in order, on
// the reply subject Register gave; a lone queued call goes as itself.
func TestDrainSendsQueuedCallsAsOneBatch(t *testing.T) {
	for _, n := range []int{1, 5} {
		t.Run(fmt.Sprint(n, " queued"), func(t *testing.T) {
			var ss Senders[int]
			s := ss.Add("t.a", func(tool string) string { return "call." + tool })
			if !s.Acquire(Call[int]{P: 0}) {
				t.Fatal("an idle sender was not acquired")
			}
			for i := 1; i <= n; i++ {
				if s.Acquire(Call[int]{P: i, Reply: fmt.Sprint("r", i), Body: body(i)}) {
					t.Fatal("a busy sender was acquired")
				}
			}
			if s.Queued() != n {
				t.Fatalf("%d calls queued, want %d", s.Queued(), n)
			}
			l := &fakeLink{hosts: 1}
			s.Drain(l, HandoffRounds)
			if len(l.sent) != 1 || s.Queued() != 0 || !s.Acquire(Call[int]{}) {
				t.Fatalf("sent %d messages, %d still queued, or the sender was left busy", len(l.sent), s.Queued())
			}
			m := l.sent[0]
			if m.subject != "call.t.a" {
				t.Errorf("sent on %q, want the tool's subject", m.subject)
			}
			if n == 1 {
				if m.reply != "r1" || string(m.body) != string(body(1)) || len(l.registered) != 0 {
					t.Errorf("a lone call went as %q on %q (registered %v)", m.body, m.reply, l.registered)
				}
				return
			}
			bodies, ids, err := wire.SplitBatch(m.body)
			if err != nil || len(bodies) != n || m.reply != "batch1" {
				t.Fatalf("batch of %d on %q (%v), want %d on batch1", len(bodies), m.reply, err, n)
			}
			for i, b := range bodies {
				if want := body(i + 1); string(b) != string(want) || ids[i] != fmt.Sprint("C", i+1) {
					t.Errorf("call %d is %q (id %s), want %q", i, b, ids[i], want)
				}
			}
			if batches, calls := ss.Stats(); batches != 1 || calls != int64(n) {
				t.Errorf("Stats = %d batches, %d calls; want 1, %d", batches, calls, n)
			}
		})
	}
}

// Calls Register drops (abandoned while they queued) are not sent; a
// batch that cannot be published fails each call it carried.
func TestBatchRegisterAndFailure(t *testing.T) {
	ss, s := busySender(4)
	l := &fakeLink{hosts: 1, drop: map[int]bool{2: true}, err: errors.New("closed")}
	s.Drain(l, 0)
	if want := []int{1, 3, 4}; !slices.Equal(l.failed, want) {
		t.Errorf("failed %v, want %v: the calls the batch carried", l.failed, want)
	}
	if batches, _ := ss.Stats(); batches != 0 {
		t.Errorf("a batch not sent was counted")
	}
}

// Queued calls to a tool whose workers are many go in messages of an
// even share each, so that each worker gets some.
func TestDrainKeepsTheFleetsSpread(t *testing.T) {
	_, s := busySender(8)
	l := &fakeLink{hosts: 4}
	s.Drain(l, 0)
	if len(l.sent) != 4 {
		t.Fatalf("8 calls to 4 workers went in %d messages, want 4", len(l.sent))
	}
}

// After its rounds, the draining goroutine hands the rest to a goroutine
// of their own and returns while they are still being sent; the sender
// stays busy, so calls go on queueing, until that goroutine is done.
func TestDrainHandsOff(t *testing.T) {
	_, s := busySender(1)
	gate := make(chan struct{})
	l := &fakeLink{hosts: 1}
	l.onPublish = func() {
		if len(l.sent) == 1 {
			s.Acquire(Call[int]{P: 2, Body: []byte("{}")}) // for the next round
		}
	}
	l.block = func(n int) {
		if n == 2 {
			<-gate // the second round waits until the first goroutine has returned
		}
	}
	var returned atomic.Bool
	go func() {
		s.Drain(l, 1)
		returned.Store(true)
	}()
	testutil.WaitFor(t, "the draining goroutine to return after its one round", returned.Load)
	if s.Acquire(Call[int]{P: 3, Body: []byte("{}")}) {
		t.Fatal("the sender went idle while a call was still being sent")
	}
	close(gate)
	testutil.WaitFor(t, "every call sent and the sender idle", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.sent) == 3 && s.Queued() == 0
	})
	testutil.WaitFor(t, "the sender idle", func() bool { return s.Acquire(Call[int]{}) })
}

// busySender is a sender for tool t.a made busy by a first Acquire, with
// calls 1 to n queued behind it.
func busySender(n int) (*Senders[int], *Sender[int]) {
	ss := &Senders[int]{}
	s := ss.Add("t.a", func(tool string) string { return tool })
	s.Acquire(Call[int]{})
	for i := 1; i <= n; i++ {
		s.Acquire(Call[int]{P: i, Body: []byte("{}")})
	}
	return ss, s
}

// body is call i's encoded form, as a batch message carries it.
func body(i int) []byte { return []byte(fmt.Sprintf("tm2 id=C%d\n{}", i)) }

// calls are queued calls with bodies of the given sizes.
func calls(sizes ...int) []Call[int] {
	q := make([]Call[int], len(sizes))
	for i, n := range sizes {
		q[i] = Call[int]{P: i, Body: make([]byte, n)}
	}
	return q
}

// fakeLink records what a Sender sends through it.
type fakeLink struct {
	mu         sync.Mutex
	hosts      int
	drop       map[int]bool // calls Register finds abandoned
	err        error        // what Publish returns
	sent       []message
	registered [][]int
	failed     []int
	onPublish  func()      // called with mu held, after a message is recorded
	block      func(n int) // called without mu, after the nth message is recorded
}

type message struct {
	subject, reply string
	body           []byte
}

func (l *fakeLink) Publish(subject, reply string, body []byte) error {
	l.mu.Lock()
	l.sent = append(l.sent, message{subject, reply, body})
	if l.onPublish != nil {
		l.onPublish()
	}
	n := len(l.sent)
	l.mu.Unlock()
	if l.block != nil {
		l.block(n)
	}
	return l.err
}

func (l *fakeLink) Limits(int) (room, hosts int) { return 1 << 20, l.hosts }

func (l *fakeLink) Register(calls []Call[int]) ([]Call[int], string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := calls[:0]
	var ids []int
	for _, c := range calls {
		if !l.drop[c.P] {
			kept = append(kept, c)
			ids = append(ids, c.P)
		}
	}
	l.registered = append(l.registered, ids)
	return kept, fmt.Sprint("batch", len(l.registered))
}

func (l *fakeLink) Failed(p int, _ error) {
	l.mu.Lock()
	l.failed = append(l.failed, p)
	l.mu.Unlock()
}
