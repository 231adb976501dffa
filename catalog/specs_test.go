package catalog

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// An answer is taken only on its own ask's token: a worker that saw its
// own reply subject cannot answer for another ask by guessing a
// neighbour's (sequential indexes once allowed that), and a token is
// not taken twice.
func TestSetFetchTakesOnlyItsOwnTokens(t *testing.T) {
	f := &setFetch{inbox: "_INBOX.x", out: map[string][]envelope.ToolSpec{}, asks: map[string]setAsk{}}
	f.asks["tokenA"] = setAsk{key: "set-a", worker: "w1", round: 0}
	f.out["set-a"] = nil // resolved already: take returns its round without decoding
	for _, subject := range []string{"_INBOX.x.0", "_INBOX.x.1", "_INBOX.x.tokenB", "_INBOX.x."} {
		if r := f.take(&nats.Msg{Subject: subject}); r != -1 {
			t.Fatalf("an answer on %s was taken for round %d: want it ignored", subject, r)
		}
	}
	if r := f.take(&nats.Msg{Subject: "_INBOX.x.tokenA"}); r != 0 {
		t.Fatalf("the answer on its own token gave round %d, want 0", r)
	}
	if r := f.take(&nats.Msg{Subject: "_INBOX.x.tokenA"}); r != -1 {
		t.Fatalf("a second answer on a used token was taken for round %d: want it ignored", r)
	}
}

// SpecSet with no workers only looks: a set decoded before is returned
// as it was cached, one not seen fails at once, and "" (a worker naming
// no set) is never taken from the cache.
func TestSpecSetWithoutWorkersOnlyLooks(t *testing.T) {
	c := &Catalog{}
	set := []envelope.ToolSpec{{Name: "t.a"}}
	c.specs.put("S", set)
	c.specs.put("", set)
	if got, err := c.SpecSet(context.Background(), "S"); err != nil || len(got) != 1 || &got[0] != &set[0] {
		t.Fatalf("SpecSet(S) = %v, %v; want the cached set itself", got, err)
	}
	for _, digest := range []string{"U", ""} {
		if got, err := c.SpecSet(context.Background(), digest); err == nil || got != nil {
			t.Errorf("SpecSet(%q) = %v, %v; want an error and no set", digest, got, err)
		}
	}
}
