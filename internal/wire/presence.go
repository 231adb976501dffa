package wire

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
}
