package wire

import (
	"strings"
	"time"
)

// DefaultPrefix is the subject prefix of a mesh unless configured otherwise;
// several meshes can share one NATS account under different prefixes.
const DefaultPrefix = "toolmesh"

// ServiceName is the ADR-32 service name every worker registers under, so
// stock NATS tooling (`nats micro ls`) sees the fleet.
const ServiceName = "toolmesh"

// DefaultHeartbeat is the heartbeat and liveness interval when none is set.
const DefaultHeartbeat = time.Second

// DefaultWindow is a stream's initial event credit when the call names
// none. The caller grants more every DefaultWindow/2 events read, so a
// producer pauses for a grant's round trip at most once per half window:
// at 64 those pauses were a third of a fast 1,000-event stream's time.
const DefaultWindow = 256

// MissedBeats is how many silent intervals end a call: a caller that hears
// nothing for 3 intervals reports worker_lost, a worker that does not hear
// its caller for 3 intervals cancels the handler.
const MissedBeats = 3

// DefaultPickupBeats is how many intervals a caller waits, by default, for
// a worker's first word on a call. Until a worker reads a call it cannot
// beat for it, and a burst can leave calls unread in a busy worker's
// buffer for longer than MissedBeats intervals without anything being lost.
const DefaultPickupBeats = 10

// DefaultMaxResultBytes caps one event (a result, or a delta) reassembled
// from chunks, on each side, unless configured otherwise.
const DefaultMaxResultBytes = 64 << 20

// Subjects builds the subjects of one mesh.
type Subjects struct {
	// Prefix defaults to DefaultPrefix.
	Prefix string
}

// Root returns the prefix in use (DefaultPrefix when unset).
func (s Subjects) Root() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

// Call is the subject a tool's workers queue-subscribe to.
func (s Subjects) Call(tool string) string { return s.Root() + ".call." + tool }

// Control is a worker's control subject: cancel, credit, caller liveness.
func (s Subjects) Control(workerID string) string { return s.Root() + ".ctl." + workerID }

// Catalog is where every worker answers with its full ToolSpecs.
func (s Subjects) Catalog() string { return s.Root() + ".catalog" }

// Describe is where one worker hosting tool answers with its ToolSpec.
func (s Subjects) Describe(tool string) string { return s.Root() + ".describe." + tool }

// QueueGroup is the queue group of call subscriptions (queue groups are
// scoped by subject, so this is one group per tool).
func (s Subjects) QueueGroup() string { return s.Root() }

// Presence is where a worker announces itself every heartbeat interval
// (and once more, with state gone, when it drains or stops). Watchers
// subscribe to PresenceAll; a worker silent for MissedBeats of its own
// intervals is gone, kill -9 included.
func (s Subjects) Presence(workerID string) string { return s.Root() + ".presence." + workerID }

// PresenceAll matches every worker's presence beacons. A pooled worker's
// id holds a dot (pool.ulid), so this is a full wildcard.
func (s Subjects) PresenceAll() string { return s.Root() + ".presence.>" }

// WorkerCatalog is where one worker answers with its full ToolSpecs, so a
// watcher can fetch a single worker's tools when its beacon says they changed.
func (s Subjects) WorkerCatalog(workerID string) string { return s.Root() + ".catalog." + workerID }

// RegistryBucket is the JetStream key-value bucket in which the mesh's
// workers register (one key per worker id), when JetStream is available.
// It lets a catalogue know how many workers exist, which NATS alone cannot.
func (s Subjects) RegistryBucket() string {
	return "toolmesh_workers_" + strings.NewReplacer(".", "_", "*", "_", ">", "_").Replace(s.Root())
}

// DefaultRegistryTTL is how long a worker's registry key outlives its last
// refresh; a worker refreshes it every third of that. A worker killed
// without a goodbye stays listed (and so makes catalogues incomplete,
// naming it) for at most this long.
const DefaultRegistryTTL = time.Minute

// MinHeartbeat floors every heartbeat interval, on both sides: a caller
// asking for beats every millisecond would otherwise buy a stream of
// messages per call for free. Callers never expect faster beats than this,
// so a worker flooring to it is never judged lost.
const MinHeartbeat = 100 * time.Millisecond

// MaxHeartbeat caps every heartbeat interval, on both sides. A worker
// checks its caller's liveness once per beat, so a huge interval would be a
// call that outlives its caller by as much; and under accounts (see
// deploy/secure) a beat is what keeps the server's reply mapping of a
// silent call alive, so the interval must stay well below the export's
// response_threshold (2 minutes by default).
const MaxHeartbeat = time.Minute
