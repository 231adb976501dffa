package liveness

import (
	"fmt"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Call is what the watchdog knows of one call in flight.
type Call struct {
	Tool     string
	WorkerID string
	Interval time.Duration // the worker's own beat interval, 0 if not yet known
	Pickup   time.Time     // the call's pickup cutoff
	Due      bool          // a Problem awaits the next settle marker
	Last     time.Time     // the last word, or the call's start before any
	Spoken   bool          // a worker has said anything at all
	Over     bool          // the terminal is queued: nothing left to judge
	Maybe    bool          // sent maybe=1: lost unnamed, it may have run
}

// SilentBeats is how many of its intervals a worker that is still
// connected may stay silent on a call before the call ends worker_lost.
const SilentBeats = 30

// Judge decides the fate of a caller's calls in flight (protocol v2,
// §8.2) from its tables: when a call is worker_lost, when its worker is
// to be probed, when a settle marker's answer settles it. It sends
// nothing; the caller acts on its verdicts.
type Judge struct {
	// Heartbeat, PickupTimeout and PickupCutoff are the caller's, with
	// their defaults applied.
	Heartbeat, PickupTimeout, PickupCutoff time.Duration
	Problems                               problembase.Registry
	Probes                                 *Probes
	Presence                               *Presence
	// Known is the spec set a digest names when the caller's catalogue
	// has seen it: a lookup, never a request.
	Known SpecLookup
	// Fetch fetches, in the background, the spec sets of fetch (digest →
	// live workers giving it), for Known to find later.
	Fetch func(fetch map[string][]string)
}

// Fate decides one call's fate on a watchdog tick: the Problem that ends
// it, or whether its worker should be probed. A call no worker has named
// by its pickup cutoff did not run and will not (a worker names a call
// before it starts it, and refuses one it reads later); its Problem waits
// for a settle marker. A call whose worker spoke and fell silent ends
// only once the worker is known gone (its probe came back 503), or after
// SilentBeats of silence however busy it may be.
func (j *Judge) Fate(now time.Time, live Call, backlog bool) (*envelope.Problem, bool) {
	quiet := now.Sub(live.Last)
	if !live.Spoken {
		return j.unpicked(now, live, quiet, backlog), false
	}
	limit := wire.MissedBeats * j.Heartbeat
	if live.Interval > 0 {
		// Judged by the interval the worker says it beats at (at least
		// ours: workers may floor intervals higher).
		limit = wire.MissedBeats * min(max(live.Interval, j.Heartbeat), wire.MaxHeartbeat)
	}
	switch {
	case quiet <= limit:
		return nil, false
	case live.WorkerID == "":
		return j.Problems.New(envelope.CodeWorkerLost, silenceDetail(live, quiet)).WithRan(envelope.RanMaybe), false
	case j.Probes.IsGone(live.WorkerID):
		return j.Problems.New(envelope.CodeWorkerLost, fmt.Sprintf(
			"worker %s is gone (the NATS server has no subscription of it) after taking up the call; the call may have run", live.WorkerID)).WithRan(envelope.RanMaybe), false
	case quiet > SilentBeats*limit/wire.MissedBeats:
		return j.Problems.New(envelope.CodeWorkerLost, silenceDetail(live, quiet)).WithRan(envelope.RanMaybe), false
	}
	return nil, true
}

// unpicked decides the fate of a call no worker has named: the Problem,
// without its "ran" member, that settling gives it. A worker starts a
// call only once the server has confirmed a heartbeat naming it, before
// the call's pickup cutoff, and refuses, unrun, one it reads past the
// cutoff (§8.2); so once the cutoff and SettleMargin are past, a call
// nobody named is either lost with a dead worker or unread in a live
// worker's buffer, and will not run. It is reported at once when a
// worker that hosts its tool is known gone; when those workers all live,
// the live one holding it will answer it (refused, unrun), so the caller
// waits for that answer — up to SilentBeats intervals — instead of
// blaming a busy worker.
func (j *Judge) unpicked(now time.Time, live Call, quiet time.Duration, backlog bool) *envelope.Problem {
	beat := j.Heartbeat
	limit := j.PickupTimeout + beat
	hosts := j.Probes.HostsOf(live.Tool, now, wire.MissedBeats*beat)
	switch {
	case live.Due || now.Sub(live.Pickup) <= j.SettleMargin() || backlog && quiet <= SilentBeats*beat:
		// While the inbox has a backlog, the heartbeat naming the call
		// may be among the messages not yet read.
		return nil
	case hosts.Gone:
		return j.Problems.New(envelope.CodeWorkerLost, unpickedDetail(live, quiet, "a worker of the tool is gone"))
	}
	if wid := j.silentHost(live.Tool, now); wid != "" {
		return j.Problems.New(envelope.CodeWorkerLost, unpickedDetail(live, quiet, "worker "+wid+
			", which hosts the tool, is gone: its presence beacons stopped and the NATS server has no subscription of it"))
	}
	switch {
	case quiet <= limit:
		return nil
	case hosts.Alive && quiet <= SilentBeats*beat:
		return nil
	case hosts.Alive:
		return j.Problems.New(envelope.CodeOverloaded, unpickedDetail(live, quiet, "the workers of the tool are alive but have not read it")).
			WithRetryAfter(beat.Seconds())
	}
	return j.Problems.New(envelope.CodeWorkerLost, unpickedDetail(live, quiet, "no worker of the tool was heard lately"))
}

// silentHost returns a worker of tool that this caller saw beaconing and
// found gone (its beacons stopped, its probe came back 503), or "";
// spec sets it needs to know and does not are fetched meanwhile.
func (j *Judge) silentHost(tool string, now time.Time) string {
	gone := j.Probes.GoneIDs()
	if len(gone) == 0 {
		return ""
	}
	wid, fetch := j.Presence.GoneHost(j.Known, tool, gone, now)
	if len(fetch) > 0 {
		j.Fetch(fetch)
	}
	return wid
}

// Suspects lists the workers to probe for tool, which has calls no
// worker has named for an interval: those heard on it lately and not
// known gone, and those whose beacons stopped and may host it.
func (j *Judge) Suspects(tool string, now time.Time) []string {
	return append(j.Probes.HostIDs(tool), j.Presence.Suspects(j.Known, tool, now)...)
}

// unpickedDetail says why a call no worker named ended.
func unpickedDetail(live Call, quiet time.Duration, why string) string {
	if live.Maybe {
		return fmt.Sprintf("no worker took up the call in %s (%s): the call accepted that a worker start it before the NATS server confirmed a heartbeat naming it (its tool is idempotent or read-only, or it carries an idempotency key), so it may have run; repeating it is safe",
			quiet.Round(time.Millisecond), why)
	}
	return fmt.Sprintf("no worker took up the call in %s (%s): workers name a call in a heartbeat the server confirms before they start it, and refuse it unrun past its pickup cutoff, so the call did not run and will not (this caller read every message routed to it before it decided)",
		quiet.Round(time.Millisecond), why)
}

// silenceDetail says why a silent call was judged lost.
func silenceDetail(live Call, quiet time.Duration) string {
	quiet = quiet.Round(time.Millisecond)
	if live.WorkerID != "" {
		return fmt.Sprintf("worker %s: no word from the worker for %s although it is still connected; the call may have run", live.WorkerID, quiet)
	}
	return fmt.Sprintf("no word from the worker for %s (%d heartbeat intervals); the call may have run", quiet, wire.MissedBeats)
}
