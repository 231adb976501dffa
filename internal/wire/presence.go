package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/toolmesh/toolmesh/envelope"
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
// SpecsDigest of its JSON without the binding (which workers keep to
// themselves). Two specs have one digest exactly when the catalogue
// counts them as one spec (equal JSON), so the spec a caller was offered
// and the spec a worker serves are compared by it (MetaSpec).
func SpecDigest(spec envelope.ToolSpec) string {
	spec.Binding = nil
	b, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	return SpecsDigest(b)
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
// decoder, already the module's JSON validator (internal/jsonx), takes
// about a third of encoding/json's time for one.
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
