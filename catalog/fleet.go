package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// SampleFleet asks every worker of the mesh for its stats over
// $SRV.STATS (the ADR-32 subject stock NATS tooling uses), gathering the
// answers that arrive within wait (default 500ms), as this identity may
// see them. It is what `toolmesh top` shows; the sample's shape is the
// module's own (internal/fleet) and may change between releases.
func (c *Catalog) SampleFleet(ctx context.Context, wait time.Duration) (fleet.Sample, error) {
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	g := fleet.NewGatherer(c.subjects.Root())
	for _, verb := range []string{"PING", "STATS"} {
		inbox := c.nc.NewInbox() // not NewRespInbox: it matches the request wildcard too, and answers would arrive twice
		sub, err := c.nc.Subscribe(inbox, g.Take)
		if err != nil {
			return fleet.Sample{}, c.problems.New(envelope.CodeConnectionLost, err.Error())
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := c.nc.PublishRequest(wire.Discovery(verb, wire.ServiceName, ""), inbox, nil); err != nil {
			return fleet.Sample{}, c.problems.New(envelope.CodeConnectionLost, err.Error())
		}
	}
	// Answers arrive one by one with no count announced, so the sample
	// takes the whole wait; Complete says whether every worker that
	// answered PING answered STATS too.
	<-ctx.Done()
	return c.viewSample(context.WithoutCancel(ctx), g.Sample()), nil
}

// viewSample keeps of s what this identity may call: $SRV.STATS answers
// every asker about every worker, so a tenant would otherwise see the
// names and load of tools in pools it may not use. A worker left with no
// tool is left out whole.
func (c *Catalog) viewSample(ctx context.Context, s fleet.Sample) fleet.Sample {
	var names []string
	for _, w := range s.Workers {
		for _, t := range w.Tools {
			names = append(names, t.Name)
		}
	}
	a, err := c.decide(ctx, names)
	if n := len(undecided(a, names)); !a.known && n > 0 {
		s.Complete = false
		s.Notes = append(s.Notes, fmt.Sprintf("%d tools are not shown: whether this identity may call them is not known (%v)", n, err))
	}
	workers := s.Workers[:0]
	for _, w := range s.Workers {
		tools := w.Tools[:0]
		for _, t := range w.Tools {
			if a.may(t.Name) {
				tools = append(tools, t)
			}
		}
		if w.Tools = tools; len(tools) > 0 {
			workers = append(workers, w)
		}
	}
	s.Workers = workers
	return s
}
