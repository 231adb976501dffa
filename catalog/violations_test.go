package catalog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
)

// violation is an error as nats.go reports a refused publish.
func violation(subject string) error {
	return fmt.Errorf("%w: Permissions Violation for Publish to %q", nats.ErrPermissionViolation, subject)
}

// unhashable is an error type == cannot compare.
type unhashable struct{ parts []string }

func (u unhashable) Error() string { return "unhashable" }

// A watch takes the first refusal of each subject it matches as its
// answer (not passed on), the second (a concurrent publish's) not; it
// ignores other subjects and errors.
func TestViolationWatchTakesFirstRefusalOnly(t *testing.T) {
	var f violationFeed
	w := &violationWatch{feed: &f, match: func(s string) bool { return s == "p.call.a" || s == "p.call.b" },
		refused: map[string]bool{}, delivery: make(chan struct{}, 1), hit: make(chan struct{})}
	f.watches = map[*violationWatch]struct{}{w: {}}
	steps := []struct {
		err   error
		taken bool
	}{
		{violation("p.call.a"), true},
		{violation("p.call.a"), false},
		{violation("p.call.c"), false},
		{errors.New("nats: slow consumer"), false},
		{unhashable{}, false},
		{violation("p.call.b"), true},
	}
	for i, s := range steps {
		if got := f.deliver(s.err); got != s.taken {
			t.Fatalf("step %d (%v): taken %v, want %v", i, s.err, got, s.taken)
		}
	}
	select {
	case <-w.hit:
	default:
		t.Fatal("the first refusal did not signal hit")
	}
	if got := w.refusedSubjects(); len(got) != 2 || !got["p.call.a"] || !got["p.call.b"] {
		t.Fatalf("refused = %v", got)
	}
	w.close()
	if f.deliver(violation("p.call.a")) || len(f.watches) != 0 {
		t.Fatal("a closed watch still takes errors")
	}
}

// awaitDelivered returns once the very error value named has been
// delivered (an equal-looking one does not count), ends with ctx, and
// gives up when the watch could not keep count.
func TestViolationWatchAwaitDelivered(t *testing.T) {
	var f violationFeed
	w := &violationWatch{feed: &f, match: func(string) bool { return false },
		refused: map[string]bool{}, delivery: make(chan struct{}, 1), hit: make(chan struct{})}
	f.watches = map[*violationWatch]struct{}{w: {}}
	last := violation("x")
	done := make(chan error, 1)
	go func() { done <- w.awaitDelivered(context.Background(), last) }()
	f.deliver(violation("x")) // equal text, another value
	f.deliver(unhashable{})
	f.deliver(last)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.awaitDelivered(ctx, violation("never")); !errors.Is(err, context.Canceled) {
		t.Fatalf("awaitDelivered after ctx ended = %v", err)
	}

	for range maxSeen {
		f.deliver(errors.New("flood"))
	}
	if err := w.awaitDelivered(context.Background(), violation("lost in the flood")); !errors.Is(err, errTooManyErrors) {
		t.Fatalf("awaitDelivered past maxSeen = %v", err)
	}
}

func TestSameErr(t *testing.T) {
	a, b := errors.New("x"), errors.New("x")
	for _, tc := range []struct {
		x, y error
		want bool
	}{
		{a, a, true}, {a, b, false}, {nil, nil, true}, {a, nil, false}, {nil, a, false},
		{unhashable{}, unhashable{}, false}, {a, unhashable{}, false},
	} {
		if got := sameErr(tc.x, tc.y); got != tc.want {
			t.Errorf("sameErr(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}
