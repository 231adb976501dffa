package mesh

import (
	"time"
)

// WireVersion is the version of the wire protocol (docs/protocol.md) this
// module's workers and callers speak: the digit of the tag that starts
// every metadata line and reply frame, "tm2".
const WireVersion = 2

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
