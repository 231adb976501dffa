package caller

import "github.com/toolmesh/toolmesh/caller/internal/coalesce"

// HoldSender makes tool's sender busy, as if a publish to the tool were
// in progress, so that unary calls to it queue; queued reports how many
// wait, and release sends them as the publishing goroutine would.
// Tests use it to form a batch without depending on timing.
// The sender must be idle: only a call's own publish makes it busy.
func HoldSender(c *Caller, tool string) (queued func() int, release func()) {
	s := c.senderFor(tool)
	if !s.Acquire(coalesce.Call[*pending]{}) {
		panic("HoldSender: the sender of " + tool + " is already busy")
	}
	return s.Queued, func() { s.Drain((*coalesceLink)(c), 0) }
}

// OpenBatches counts the batches c still routes replies for.
func OpenBatches(c *Caller) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.batches)
}

// OpenWatches counts the shared context watches c still holds.
func OpenWatches(c *Caller) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}

// WatchFrom is watchFrom: the calls in flight from which calls sharing
// a context wait in a shared watch.
const WatchFrom = watchFrom

// ConfigOf is c's configuration with every default filled in, in
// Config's own terms: New given it makes a caller configured alike.
func ConfigOf(c *Caller) Config {
	cfg := c.cfg
	if cfg.Retries == 0 { // held as 0 inside; Config says none so
		cfg.Retries = NoRetries
	}
	return cfg
}
