package fleet

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// Sample is one round of $SRV.STATS answers from the mesh's workers,
// as this identity's view shows them: only the tools it may call, and only
// the workers hosting one. Complete is false when a worker answered PING
// but not STATS in time, or when whether this identity may call some tool
// could not be learnt (that tool is left out); Notes say why.
type Sample struct {
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
	ToolLoad
}

// Gatherer collects PING and STATS answers of one prefix's workers.
type Gatherer struct {
	prefix string
	mu     sync.Mutex
	pinged map[string]bool
	stats  map[string]micro.Stats
}

// NewGatherer starts a gathering of the workers of one prefix.
func NewGatherer(prefix string) *Gatherer {
	return &Gatherer{prefix: prefix, pinged: map[string]bool{}, stats: map[string]micro.Stats{}}
}

// Take files one answer; PING and STATS answers differ by their type.
func (g *Gatherer) Take(m *nats.Msg) {
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

// Sample is what has been gathered so far.
func (g *Gatherer) Sample() Sample {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := Sample{At: time.Now(), Workers: []WorkerSample{}, Complete: true}
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
