package caller

import (
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// probeWorker asks worker wid for this caller's heartbeat now, at most once per
// interval.
func (c *Caller) probeWorker(wid string, now time.Time) {
	if !wire.ValidWorkerID(wid) {
		return
	}
	tok := c.probes.Next(wid, now, c.cfg.Heartbeat)
	if tok == "" {
		return
	}
	ctl := wire.Control{Op: wire.OpBeat, CallerID: c.cfg.ID}
	if err := c.nc.PublishRequest(c.subjects.Control(wid), c.inbox+tok, ctl.Encode()); err != nil {
		c.log.Debug("worker probe not sent", "worker_id", wid, "err", err)
	}
}
