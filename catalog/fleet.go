package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh"
)

// FleetSample is one round of $SRV.STATS answers from the mesh's workers,
// as this identity's view shows them: only the tools it may call, and only
// the workers hosting one. Complete is false when a worker answered PING
// but not STATS in time, or when whether this identity may call some tool
// could not be learnt (that tool is left out); Notes say why.
type FleetSample struct {
	At       time.Time      `json:"at"`
	Workers  []WorkerSample `json:"workers"`
	Complete bool           `json:"complete"`
	Notes    []string       `json:"notes,omitempty"`
}

// WorkerSample is one worker's stats: totals since it started.
type WorkerSample struct {
	ID      string       `json:"id"`
	Version string       `json:"version,omitempty"`
	Started time.Time    `json:"started"`
	Tools   []ToolSample `json:"tools"`
}

// ToolSample is one tool's counters on one worker.
type ToolSample struct {
	Name           string        `json:"name"`
	Requests       int64         `json:"requests"`
	Errors         int64         `json:"errors"`
	ProcessingTime time.Duration `json:"processing_time"`
	mesh.ToolLoad
}

// SampleFleet asks every worker of the mesh for its stats over
// $SRV.STATS (the ADR-32 subject stock NATS tooling uses), gathering the
// answers that arrive within wait (default 500ms).
func (c *Catalog) SampleFleet(ctx context.Context, wait time.Duration) (FleetSample, error) {
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	g := newGatherer(c.subjects.Root())
	for _, verb := range []string{"PING", "STATS"} {
		inbox := c.nc.NewInbox() // not NewRespInbox: it matches the request wildcard too, and answers would arrive twice
		sub, err := c.nc.Subscribe(inbox, g.take)
		if err != nil {
			return FleetSample{}, c.problems.New(envelope.CodeConnectionLost, err.Error())
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := c.nc.PublishRequest(wire.Discovery(verb, wire.ServiceName, ""), inbox, nil); err != nil {
			return FleetSample{}, c.problems.New(envelope.CodeConnectionLost, err.Error())
		}
	}
	// Answers arrive one by one with no count announced, so the sample
	// takes the whole wait; Complete says whether every worker that
	// answered PING answered STATS too.
	<-ctx.Done()
	return c.viewSample(context.WithoutCancel(ctx), g.sample()), nil
}

// viewSample keeps of s what this identity may call: $SRV.STATS answers
// every asker about every worker, so a tenant would otherwise see the
// names and load of tools in pools it may not use. A worker left with no
// tool is left out whole.
func (c *Catalog) viewSample(ctx context.Context, s FleetSample) FleetSample {
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

// gatherer collects PING and STATS answers of one prefix's workers.
type gatherer struct {
	prefix string
	mu     sync.Mutex
	pinged map[string]bool
	stats  map[string]micro.Stats
}

func newGatherer(prefix string) *gatherer {
	return &gatherer{prefix: prefix, pinged: map[string]bool{}, stats: map[string]micro.Stats{}}
}

// take files one answer; PING and STATS answers differ by their type.
func (g *gatherer) take(m *nats.Msg) {
	var s micro.Stats
	if json.Unmarshal(m.Data, &s) != nil || s.Metadata["toolmesh.prefix"] != g.prefix {
		return
	}
	g.mu.Lock()
	switch s.Type {
	case micro.PingResponseType:
		g.pinged[s.ID] = true
	case micro.StatsResponseType:
		g.stats[s.ID] = s
	}
	g.mu.Unlock()
}

func (g *gatherer) sample() FleetSample {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := FleetSample{At: time.Now(), Workers: []WorkerSample{}, Complete: true}
	for id := range g.pinged {
		if _, ok := g.stats[id]; !ok {
			out.Complete = false
		}
	}
	if !out.Complete {
		out.Notes = append(out.Notes, "some workers answered PING but not STATS in time; their numbers are missing")
	}
	calls := wire.Subjects{Prefix: g.prefix}.Call("")
	for _, s := range g.stats {
		out.Workers = append(out.Workers, workerSample(s, calls))
	}
	sort.Slice(out.Workers, func(i, j int) bool { return out.Workers[i].ID < out.Workers[j].ID })
	return out
}

// workerSample reads one worker's stats. An endpoint's name is the tool
// name made ADR-32 safe (dots become underscores), so the tool is read
// from the endpoint's subject, the call subject with callPrefix before it.
func workerSample(s micro.Stats, callPrefix string) WorkerSample {
	w := WorkerSample{ID: s.ID, Version: s.Version, Started: s.Started, Tools: []ToolSample{}}
	for _, ep := range s.Endpoints {
		name, ok := strings.CutPrefix(ep.Subject, callPrefix)
		if !ok {
			name = ep.Name
		}
		t := ToolSample{Name: name, Requests: int64(ep.NumRequests), Errors: int64(ep.NumErrors), ProcessingTime: ep.ProcessingTime}
		_ = json.Unmarshal(ep.Data, &t.ToolLoad) // a worker without load data still counts
		w.Tools = append(w.Tools, t)
	}
	sort.Slice(w.Tools, func(i, j int) bool { return w.Tools[i].Name < w.Tools[j].Name })
	return w
}
