package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// CatalogTool is one tool as the catalogue sees it across the fleet.
type CatalogTool struct {
	Spec envelope.ToolSpec `json:"spec"`
	// Instances counts the workers hosting the tool.
	Instances int      `json:"instances"`
	Workers   []string `json:"workers"`
}

// Catalog is the mesh's tools gathered from every worker that answered.
// Complete is false, with the silent workers named in ScopeWarnings, when a
// worker answered the discovery ping but not the catalogue request.
type Catalog struct {
	Tools         []CatalogTool `json:"tools"`
	Workers       int           `json:"workers"`
	Complete      bool          `json:"complete"`
	ScopeWarnings []string      `json:"scope_warnings,omitempty"`
}

// catalogEntry mirrors worker.CatalogEntry (the caller does not import worker).
type catalogEntry struct {
	WorkerID string              `json:"worker_id"`
	Tools    []envelope.ToolSpec `json:"tools"`
}

// Catalog gathers every worker's ToolSpecs. NATS cannot say how many
// workers exist, so this is a scatter-gather bounded by wait: it pings the
// fleet ($SRV.PING.toolmesh) and asks for the catalogue at once, and stops
// early once every pinged worker has answered.
func (c *Caller) Catalog(ctx context.Context, wait time.Duration) (Catalog, error) {
	if wait <= 0 {
		wait = 300 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var (
		mu      sync.Mutex
		pinged  = map[string]bool{}
		entries = map[string]catalogEntry{}
		changed = make(chan struct{}, 1)
	)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	prefix := c.subjects.Root()
	gather := func(subject string, take func(*nats.Msg)) (*nats.Subscription, error) {
		inbox := c.nc.NewRespInbox()
		sub, err := c.nc.Subscribe(inbox, func(m *nats.Msg) { take(m); poke() })
		if err != nil {
			return nil, c.problems.New(envelope.CodeConnectionLost, err.Error())
		}
		if err := c.nc.PublishRequest(subject, inbox, nil); err != nil {
			_ = sub.Unsubscribe()
			return nil, c.problems.New(envelope.CodeConnectionLost, err.Error())
		}
		return sub, nil
	}
	pingSub, err := gather("$SRV.PING."+mesh.ServiceName, func(m *nats.Msg) {
		var p micro.Ping
		if json.Unmarshal(m.Data, &p) == nil && p.Metadata["toolmesh.prefix"] == prefix {
			mu.Lock()
			pinged[p.ID] = true
			mu.Unlock()
		}
	})
	if err != nil {
		return Catalog{}, err
	}
	defer func() { _ = pingSub.Unsubscribe() }()
	catSub, err := gather(c.subjects.Catalog(), func(m *nats.Msg) {
		var e catalogEntry
		if json.Unmarshal(m.Data, &e) == nil {
			mu.Lock()
			entries[e.WorkerID] = e
			mu.Unlock()
		}
	})
	if err != nil {
		return Catalog{}, err
	}
	defer func() { _ = catSub.Unsubscribe() }()
	allIn := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(pinged) == 0 {
			return false
		}
		for id := range pinged {
			if _, ok := entries[id]; !ok {
				return false
			}
		}
		return true
	}
	for !allIn() && ctx.Err() == nil {
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return buildCatalog(pinged, entries), nil
}

func buildCatalog(pinged map[string]bool, entries map[string]catalogEntry) Catalog {
	byName := map[string]*CatalogTool{}
	for _, e := range entries {
		for _, s := range e.Tools {
			t, ok := byName[s.Name]
			if !ok {
				t = &CatalogTool{Spec: s}
				byName[s.Name] = t
			}
			t.Instances++
			t.Workers = append(t.Workers, e.WorkerID)
		}
	}
	cat := Catalog{Tools: []CatalogTool{}, Workers: len(entries), Complete: true}
	for _, t := range byName {
		sort.Strings(t.Workers)
		cat.Tools = append(cat.Tools, *t)
	}
	sort.Slice(cat.Tools, func(i, j int) bool { return cat.Tools[i].Spec.Name < cat.Tools[j].Spec.Name })
	var silent []string
	for id := range pinged {
		if _, ok := entries[id]; !ok {
			silent = append(silent, id)
		}
	}
	sort.Strings(silent)
	for _, id := range silent {
		cat.Complete = false
		cat.ScopeWarnings = append(cat.ScopeWarnings, fmt.Sprintf("worker %s answered the discovery ping but not the catalogue request", id))
	}
	return cat
}

// Describe returns the spec of tool from one worker hosting it, or
// tool_not_found when none does.
func (c *Caller) Describe(ctx context.Context, tool string) (envelope.ToolSpec, error) {
	if err := envelope.ValidateToolName(tool); err != nil {
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeInvalidInput, err.Error())
	}
	msg, err := c.nc.RequestWithContext(ctx, c.subjects.Describe(tool), nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeToolNotFound, fmt.Sprintf("no worker hosts tool %q", tool))
	case err != nil && ctx.Err() != nil:
		return envelope.ToolSpec{}, c.problems.Rebase(envelope.AsProblem(ctx.Err(), envelope.CodeTimeout))
	case err != nil:
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeConnectionLost, err.Error())
	}
	var spec envelope.ToolSpec
	if err := json.Unmarshal(msg.Data, &spec); err != nil {
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeInternal, "malformed spec from worker: "+err.Error())
	}
	return spec, nil
}
