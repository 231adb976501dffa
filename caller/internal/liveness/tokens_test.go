package liveness

import (
	"strings"
	"testing"
	"time"
)

// A probe's and a settle marker's reply tokens carry a random tail after
// their sequence number, so that a client allowed to publish on the
// caller's inbox cannot forge a reply by counting: two probes of one
// worker, or two markers, share no tail.
func TestReplyTokensAreNotGuessable(t *testing.T) {
	p := NewProbes()
	now := time.Now()
	a, b := p.Next("w1", now, 0), p.Next("w1", now.Add(time.Second), 0)
	var m Markers
	c, d := m.Next(now, 0), m.Next(now.Add(time.Second), 0)
	for _, tc := range []struct{ first, second, prefix string }{{a, b, ProbeTokenPrefix + "1-"}, {c, d, MarkerTokenPrefix + "1-"}} {
		tail := strings.TrimPrefix(tc.first, tc.prefix)
		if tail == tc.first || len(tail) != 16 || strings.Contains(tc.second, tail) {
			t.Fatalf("tokens %q then %q: want %q and a 16-character random tail the next does not repeat", tc.first, tc.second, tc.prefix)
		}
	}
	if _, ok := p.Gone(a); ok {
		t.Fatal("the replaced probe's token still names a probe in flight")
	}
	if _, ok := p.Gone(b); !ok {
		t.Fatal("the current probe's token names no probe")
	}
}
