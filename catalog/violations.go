package catalog

import (
	"context"
	"errors"
	"reflect"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// The server refuses a publish its permissions forbid with a -ERR naming
// the subject, sent before it answers any later PING on the connection;
// nats.go hands it to the connection's error handler, one callback after
// another in the order they arrived. The catalogue hears them to learn in
// one round trip what this identity may not do: a call subject it may
// not publish to (a probe, tenantview.go) and a refused JetStream request
// (the registry, registry.go), which would otherwise go unanswered until
// its deadline.

// violationFeed passes every error the connection reports to the watches
// open at the time. Its handler is chained onto the connection's once,
// when first needed, and passes every error on to the handler it found
// but the refusals of the catalogue's own publishes: those are answers to
// its questions, not errors of the connection's owner (nats.go's default
// handler would print each on stderr).
type violationFeed struct {
	once    sync.Once
	mu      sync.Mutex
	watches map[*violationWatch]struct{}
}

// violationWatch hears the publish violations whose subject match
// accepts, and every error delivered while it is open (up to maxSeen),
// so a probe can tell when the errors of its round trip are all in.
type violationWatch struct {
	feed     *violationFeed
	match    func(subject string) bool
	mu       sync.Mutex
	refused  map[string]bool
	seen     []error
	overflow bool
	delivery chan struct{} // a token per delivery, cap 1
	hit      chan struct{} // closed at the first refused subject
}

// maxSeen bounds the errors a watch remembers; a connection reporting
// more during one round trip leaves the watch undecided.
const maxSeen = 1024

// errTooManyErrors says a watch could not tell its round trip's errors
// from the flood around them.
var errTooManyErrors = errors.New("the connection reported too many errors during the round trip to tell which were the probe's")

// watch opens a watch of the publish violations whose subject match
// accepts; close it when done.
func (f *violationFeed) watch(nc *nats.Conn, match func(string) bool) *violationWatch {
	f.once.Do(func() {
		prev := nc.ErrorHandler()
		nc.SetErrorHandler(func(c *nats.Conn, s *nats.Subscription, err error) {
			if !f.deliver(err) && prev != nil {
				prev(c, s, err)
			}
		})
	})
	w := &violationWatch{feed: f, match: match, refused: map[string]bool{},
		delivery: make(chan struct{}, 1), hit: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watches == nil {
		f.watches = map[*violationWatch]struct{}{}
	}
	f.watches[w] = struct{}{}
	return w
}

// deliver hands err to every open watch; it reports whether one took it
// as the answer it was waiting for (see take), so it is no error of the
// connection's owner and is not passed on to the handler found.
func (f *violationFeed) deliver(err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	answered := false
	for w := range f.watches {
		answered = w.take(err) || answered
	}
	return answered
}

// close stops the watch.
func (w *violationWatch) close() {
	w.feed.mu.Lock()
	defer w.feed.mu.Unlock()
	delete(w.feed.watches, w)
}

// take records err; it reports whether err was the first refusal of a
// subject the watch matches: the answer to the watch's own publish (each
// publishes once per subject), which a concurrent publish of the owner's
// to the same subject does not take from it, as its refusal comes second.
func (w *violationWatch) take(err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) < maxSeen {
		w.seen = append(w.seen, err)
	} else {
		w.overflow = true
	}
	defer func() {
		select {
		case w.delivery <- struct{}{}:
		default:
		}
	}()
	op, subject, ok := wire.Violation(err)
	if !ok || op != wire.OpPublish || !w.match(subject) || w.refused[subject] {
		return false
	}
	if len(w.refused) == 0 {
		close(w.hit)
	}
	w.refused[subject] = true
	return true
}

// refusedSubjects returns the subjects refused so far.
func (w *violationWatch) refusedSubjects() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]bool, len(w.refused))
	for s := range w.refused {
		out[s] = true
	}
	return out
}

// awaitDelivered waits until the error last has been delivered to the
// watch: the callbacks run in the order the errors arrived, so every error
// before it has been too. It ends early with ctx's error, or
// errTooManyErrors when the watch could not keep count.
func (w *violationWatch) awaitDelivered(ctx context.Context, last error) error {
	for {
		w.mu.Lock()
		done, overflow := containsErr(w.seen, last), w.overflow
		w.mu.Unlock()
		switch {
		case done:
			return nil
		case overflow:
			return errTooManyErrors
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.delivery:
		}
	}
}

// containsErr reports whether errs holds the very error value e.
func containsErr(errs []error, e error) bool {
	for _, x := range errs {
		if sameErr(x, e) {
			return true
		}
	}
	return false
}

// sameErr reports whether a and b are the same error value (nats.go makes
// a new one for each error it reports); never panics on an error type
// that cannot be compared.
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}
