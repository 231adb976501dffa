package caller

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Finding a dead worker that never spoke to this caller (protocol v2,
// §8.2). A call the server handed to a worker that then died unread is
// named by nobody; the caller can end it, unrun, once it knows a worker
// of the tool is gone — but the workers it has heard on a tool are only
// those that answered its own calls. So the caller also follows the
// workers' presence beacons (§14.3): a worker whose beacons stop while
// calls of a tool it may host wait unnamed is probed (§8.2, a beat with
// a reply subject), and its 503 says it is gone. Which tools a worker
// hosts comes from its beacon's spec-set digest: a digest's tools are
// known when a worker giving it named a call of the tool, or from the
// spec sets the caller's catalogue has seen (List, Watch), or, for a worker found gone
// whose set is unknown, fetched from a live worker giving the same set.

// subscribePresence follows the workers' beacons. A worker repeats the
// same beacon every interval until its tools change, so a beacon equal
// to the worker's last costs a map lookup, not a decode: a caller in a
// fleet of thousands of workers pays little for following them. A beacon
// counts only on its own worker's subject, which the operator's
// permissions bind to the worker's pool (§13.2).
func (c *Caller) subscribePresence() (*nats.Subscription, error) {
	root := c.subjects.Presence("")
	return c.nc.Subscribe(c.subjects.PresenceAll(), func(m *nats.Msg) {
		wid, ok := strings.CutPrefix(m.Subject, root)
		now := time.Now()
		if !ok || c.presence.Repeat(wid, m.Data, now) {
			return
		}
		b, err := wire.ParseBeacon(m.Data)
		if err != nil || b.WorkerID != wid || !wire.ValidWorkerID(wid) {
			return
		}
		c.presence.Beacon(b, m.Data, wire.BeaconInterval(b.IntervalMS, c.cfg.Heartbeat), now)
	})
}

// knownSet is the spec set digest names, when the caller's catalogue has
// seen it: a lookup, never a request.
func (c *Caller) knownSet(digest string) ([]envelope.ToolSpec, bool) {
	specs, err := c.cat.SpecSet(context.Background(), digest)
	return specs, err == nil
}

// fetchSets fetches, in the background, the spec sets of fetch (digest →
// live workers giving it) into the catalogue's spec cache, bounded by MissedBeats
// intervals and by the caller's life.
func (c *Caller) fetchSets(fetch map[string][]string) {
	for digest, twins := range fetch {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), wire.MissedBeats*c.cfg.Heartbeat)
			defer cancel()
			go func() {
				select {
				case <-c.done:
					cancel()
				case <-ctx.Done():
				}
			}()
			if _, err := c.cat.SpecSet(ctx, digest, twins...); err != nil {
				c.log.Debug("spec set of a gone worker not fetched", "specs", digest, "err", err)
			}
		}()
	}
}
