package liveness

import (
	"strconv"
	"sync"
	"time"
)

// MarkerTokenPrefix starts a settle marker's reply token: no call or
// batch id (an upper-case ULID) nor a probe's starts with it.
const MarkerTokenPrefix = "ws-"

// Markers are a caller's settle markers in flight: reply token → when
// it was sent.
type Markers struct {
	mu   sync.Mutex
	seq  uint64
	last time.Time
	sent map[string]time.Time
}

// Next makes a new marker's token, or "" when one was sent less than
// every ago and is still out.
func (s *Markers) Next(now time.Time, every time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) > 0 && now.Sub(s.last) < every {
		return ""
	}
	if s.sent == nil || len(s.sent) >= maxSettleMarkers {
		s.sent = map[string]time.Time{} // markers lost with a connection
	}
	s.seq++
	tok := MarkerTokenPrefix + strconv.FormatUint(s.seq, 36) + unguessable()
	s.sent[tok], s.last = now, now
	return tok
}

// maxSettleMarkers bounds the markers remembered in flight.
const maxSettleMarkers = 64

// Take returns when the marker tok was sent, forgetting it.
func (s *Markers) Take(tok string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.sent[tok]
	delete(s.sent, tok)
	return at, ok
}
