package mesh

import (
	"strings"
	"time"
)

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
