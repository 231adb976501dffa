package worker

import "sync"

// shares counts the calls each sender holds admitted on this worker, so
// that no sender takes more than Config.Limits.MaxPerIdentity of its slots
// and queue while others wait: without it one tenant's burst of unleased
// calls locks every other tenant out of a shared worker for minutes.
//
// A sender is the identity the NATS server vouches for (account/user,
// under deploy/secure), however many caller ids it makes up; in a single
// account, where every client is equally trusted, it is the caller id,
// and all unleased calls (no caller=) are one sender together.
type shares struct {
	limit int
	mu    sync.Mutex
	held  map[shareKey]int
}

// shareKey names a sender: an identity, or a caller id. A struct rather
// than a joined string, so that naming it allocates nothing per call.
type shareKey struct {
	identity bool
	name     string
}

// senderOf names the sender whose share c counts against.
func senderOf(c *call) shareKey {
	if c.key.identity != "" {
		return shareKey{identity: true, name: c.key.identity}
	}
	return shareKey{name: c.callerID}
}

// take counts c against its sender's share; false when the share is full.
func (s *shares) take(c *call) bool {
	k := senderOf(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[k] >= s.limit {
		return false
	}
	s.held[k]++
	c.share, c.shared = k, true
	return true
}

// give returns c's place in its sender's share (once; harmless after).
func (s *shares) give(c *call) {
	if !c.shared {
		return
	}
	s.mu.Lock()
	if s.held[c.share]--; s.held[c.share] <= 0 {
		delete(s.held, c.share)
	}
	s.mu.Unlock()
	c.share, c.shared = shareKey{}, false
}
