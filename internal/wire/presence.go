package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// SpecsDigest names a catalogue's tools array by its content: the hex
// SHA-256 of exactly the bytes a catalogue answer carries as "tools".
// Workers hosting the same tools share it, so a reader fetches each
// distinct spec set once, and checks what it fetched against it.
func SpecsDigest(tools []byte) string {
	sum := sha256.Sum256(tools)
	return hex.EncodeToString(sum[:])
}

// SpecDigest names one tool spec by its content, as callers see it: the
// SpecsDigest of its JSON without a binding member (bindings stay in the
// worker, and an envelope.ToolSpec has none; the digest the protocol
// defines leaves one out all the same). Two specs have one digest exactly when the catalogue
// counts them as one spec (equal JSON), so the spec a caller was offered
// and the spec a worker serves are compared by it (MetaSpec). spec is an
// envelope.ToolSpec (or a pointer to one); wire takes it as a value to
// encode, as it imports no public package of the module.
func SpecDigest(spec any) string {
	b, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	return SpecsDigest(withoutMember(b, "binding"))
}

// withoutMember returns the compact JSON object obj (as json.Marshal
// writes it) without its top-level member name: the bytes its encoder
// writes when the member is omitted. obj is returned as it is when it has
// no such member. A scan, because a round trip through a map would sort
// the members and so change every digest, and costs twice as much
// (BenchmarkSpecDigest: about 2x, 25 allocations against 52).
func withoutMember(obj []byte, name string) []byte {
	if len(obj) < 2 || obj[0] != '{' || !bytes.Contains(obj, []byte(`"`+name+`"`)) {
		return obj // the common case: no such member anywhere (one SIMD pass)
	}
	for i := 1; i < len(obj) && obj[i] == '"'; {
		start, end := i, StringEnd(obj, i)
		vend := ValueEnd(obj, end+1) // compact: the colon is at end
		if key, err := UnquoteBytes(obj[start:end]); err != nil || string(key) != name {
			i = vend + 1 // past the comma (or the closing brace)
			continue
		}
		if vend < len(obj) && obj[vend] == ',' {
			return append(obj[:start:start], obj[vend+1:]...) // the comma after it goes too
		}
		if start > 1 {
			start-- // the last member: the comma before it goes too
		}
		return append(obj[:start:start], obj[vend:]...)
	}
	return obj
}

// Beacon states.
const (
	BeaconUp   = "up"   // serving
	BeaconGone = "gone" // draining or stopped: take no more calls to it
)

// Beacon is one presence announcement.
type Beacon struct {
	WorkerID string `json:"worker_id"`
	State    string `json:"state"`
	// Revision changes whenever the worker's set of tools changes.
	Revision int64 `json:"revision"`
	// IntervalMS is the worker's beacon interval: silence for MissedBeats
	// of them means the worker is gone.
	IntervalMS int64 `json:"interval_ms"`
	// Specs is the digest of the worker's catalogue (SpecsDigest of the
	// tools array its catalogue answer carries), so a watcher or a
	// catalogue that already holds those specs needs nothing more.
	Specs string `json:"specs,omitempty"`
	// RefreshMS is how often the worker rewrites its registry key (only
	// in the registry's copy of the beacon).
	RefreshMS int64 `json:"refresh_ms,omitempty"`
}

// ParseBeacon decodes a beacon (a presence message or a registry value).
// A caller reads 10,000 of them in every registry pass; segmentio's
// decoder takes under a third of encoding/json's time for one
// (BenchmarkParseBeacon: about 3.5x, 4 allocations against 8).
func ParseBeacon(data []byte) (Beacon, error) {
	var b Beacon
	err := segjson.Unmarshal(data, &b)
	return b, err
}

// MaxBeaconInterval bounds the interval a beacon may claim, so no worker
// can make itself immortal in a reader's view of the fleet.
const MaxBeaconInterval = 10 * time.Minute

// BeaconInterval is the interval a worker claims (in a beacon or a
// catalogue answer), bounded by MaxBeaconInterval; orElse when it claims
// none (a worker from before the claim existed).
func BeaconInterval(ms int64, orElse time.Duration) time.Duration {
	if ms <= 0 {
		return orElse
	}
	return min(time.Duration(ms)*time.Millisecond, MaxBeaconInterval)
}

// PoolOf is the pool a worker id names: its first token when it has more
// than one, "" for a worker without a pool (protocol v2, §14.1, "Scope").
func PoolOf(workerID string) string {
	if i := strings.IndexByte(workerID, '.'); i > 0 {
		return workerID[:i]
	}
	return ""
}
