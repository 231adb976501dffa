package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/ctxsleep"
	"github.com/toolmesh/toolmesh/worker"
)

// The fleet rows show that coalescing does not unbalance a fleet:
// --fleet-workers workers, each running at most --fleet-slots
// handlers at once, each handler taking --fleet-work, kept exactly at
// capacity (workers × slots calls in flight) by one caller — beside as
// many raw nats.go responders in one queue group, each running as many
// at once for as long. The work is a wait, not CPU, so the ratio is
// how evenly each side spreads calls over its fleet: 1.00 when no
// worker is ever idle while another has calls queued, as balanced as
// NATS's random choice of a queue member per message lets raw be.
const peersFleet = "raw: as many nats.go responders in one queue group, as many slots each, the same wait"

// benchFleet is the fleet rows' workers and raw responders.
type benchFleet struct {
	conns   []*nats.Conn
	workers []*worker.Worker
}

func (f *benchFleet) close() {
	for _, w := range f.workers {
		w.Stop()
	}
	for _, nc := range f.conns {
		nc.Close()
	}
}

// fleetTool names the fleet's tool and raw subject.
const fleetTool = "fleet"

// serveFleet starts the fleet: each worker and each raw responder on a
// connection of its own, as separate hosts would be.
func (b *bencher) serveFleet(dial func(string) (*nats.Conn, error), prefix string, o *benchOptions, env *Env) error {
	f := &benchFleet{}
	b.fleet = f
	capacity := o.fleetWorkers * o.fleetSlots
	work := o.fleetWork
	for i := range o.fleetWorkers {
		nc, err := dial("bench fleet worker " + strconv.Itoa(i))
		if err != nil {
			return err
		}
		f.conns = append(f.conns, nc)
		// Queue room for every call in flight, on both sides: a worker
		// handed more than its slots holds them, as a raw responder does.
		w, err := worker.New(nc, worker.Config{Prefix: prefix, Logger: env.Log, Description: "toolmesh bench fleet", Limits: worker.Limits{MaxConcurrent: o.fleetSlots, MaxQueued: capacity, MaxPerIdentity: capacity}})
		if err != nil {
			return envelope.NewProblem(envelope.CodeInternal, err.Error())
		}
		f.workers = append(f.workers, w)
		if err := w.Register(envelope.ToolSpec{Name: fleetTool}, worker.HandlerFunc(
			func(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
				if err := ctxsleep.Sleep(ctx, work); err != nil {
					return nil, err
				}
				return req.Args, nil
			})); err != nil {
			return envelope.AsProblem(err, envelope.CodeInternal)
		}
		rnc, err := dial("bench fleet responder " + strconv.Itoa(i))
		if err != nil {
			return err
		}
		f.conns = append(f.conns, rnc)
		if err := serveFleetRaw(rnc, b.rawSubject+"."+fleetTool, o.fleetSlots, work); err != nil {
			return err
		}
	}
	return nil
}

// serveFleetRaw is one raw responder with slots handlers at once: the
// subscription's callback waits for a free slot (messages queue behind
// it, as a worker's calls do), and each message's wait runs on a
// goroutine of its own.
func serveFleetRaw(nc *nats.Conn, subject string, slots int, work time.Duration) error {
	free := make(chan struct{}, slots)
	_, err := nc.QueueSubscribe(subject, "q", func(m *nats.Msg) {
		free <- struct{}{}
		go func() {
			time.Sleep(work)
			_ = m.Respond(m.Data)
			<-free
		}()
	})
	if err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	return nc.Flush()
}

// fleetScenarios are the fleet rows: coalescing on (the default) and off.
// Target: ≥ 0.95 of raw's throughput, as coalescing off was measured
// (0.94–1.00 at 8 workers) when batches of 8 took 0.87.
func fleetScenarios(o *benchOptions) []benchScenario {
	if o.fleetWorkers == 0 {
		return nil
	}
	name := fmt.Sprintf("fleet of %d × %d slots, %s each", o.fleetWorkers, o.fleetSlots, o.fleetWork)
	goals := []benchGoal{{metric: metricThroughput, bound: 0.95}}
	return []benchScenario{
		{name: name, inFlight: o.fleetWorkers * o.fleetSlots, peers: peersFleet, goals: goals,
			raw: (*bencher).rawFleet, toolmesh: func(b *bencher, ctx context.Context) error { return b.meshFleet(ctx, b.c) }},
		{name: name + ", coalescing off", inFlight: o.fleetWorkers * o.fleetSlots, peers: peersFleet,
			raw: (*bencher).rawFleet, toolmesh: func(b *bencher, ctx context.Context) error { return b.meshFleet(ctx, b.cOff) }},
	}
}

func (b *bencher) rawFleet(ctx context.Context) error {
	_, err := b.raw.RequestWithContext(ctx, b.rawSubject+"."+fleetTool, b.args)
	return err
}

func (b *bencher) meshFleet(ctx context.Context, c *caller.Caller) error {
	_, err := c.Call(ctx, fleetTool, b.args)
	return err
}
