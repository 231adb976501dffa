package caller

// HoldSender makes tool's sender busy, as if a publish to the tool were
// in progress, so that unary calls to it queue; queued reports how many
// wait, and release sends them as the publishing goroutine would.
// Tests use it to form a batch without depending on timing.
func HoldSender(c *Caller, tool string) (queued func() int, release func()) {
	s := c.senderFor(tool)
	s.mu.Lock()
	s.busy = true
	s.mu.Unlock()
	queued = func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue)
	}
	return queued, func() { c.drain(s, 0) }
}

// OpenBatches counts the batches c still routes replies for.
func OpenBatches(c *Caller) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.batches)
}

// BatchCap is batchCap: the most calls one message carries of queued
// calls to a tool hosted by hosts workers.
func BatchCap(queued, hosts int) int { return batchCap(queued, hosts) }

// MaxBatch is the most calls a batch carries.
const MaxBatch = maxBatch

// OpenWatches counts the shared context watches c still holds.
func OpenWatches(c *Caller) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}

// WatchFrom is watchFrom: the calls in flight from which calls sharing
// a context wait in a shared watch.
const WatchFrom = watchFrom
