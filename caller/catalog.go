package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/envelope"
)

// CatalogTool is one tool as the catalogue sees it across the fleet.
type CatalogTool struct {
	Spec envelope.ToolSpec `json:"spec"`
	// Instances counts the workers hosting the tool.
	Instances int      `json:"instances"`
	Workers   []string `json:"workers"`
}

// Catalog is the mesh's tools gathered from every worker that answered.
// Complete is true only when the catalogue can know it has every worker:
// the mesh's JetStream worker registry lists which workers exist and each
// of them answered. Otherwise Complete is false and ScopeWarnings say why
// (no registry, or the registered workers that stayed silent).
type Catalog struct {
	Tools         []CatalogTool `json:"tools"`
	Workers       int           `json:"workers"`
	Complete      bool          `json:"complete"`
	ScopeWarnings []string      `json:"scope_warnings,omitempty"`
}

// catalogEntry is one worker's catalogue answer.
type catalogEntry = wire.CatalogEntry

// specDecoder decodes the specs of catalogue answers, each distinct spec
// once: ToolSpec's decoder validates schemas, and a fleet's replicas send
// the same specs over and over (at 10,000 workers this is most of a
// catalogue's cost). Not safe for concurrent use.
type specDecoder map[string]envelope.ToolSpec

// entry decodes one worker's answer.
func (d specDecoder) entry(data []byte) (catalogEntry, error) {
	var raw struct {
		WorkerID   string            `json:"worker_id"`
		Tools      []json.RawMessage `json:"tools"`
		IntervalMS int64             `json:"interval_ms"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return catalogEntry{}, err
	}
	if raw.WorkerID == "" {
		return catalogEntry{}, errors.New("catalogue answer without worker_id")
	}
	e := catalogEntry{WorkerID: raw.WorkerID, IntervalMS: raw.IntervalMS, Tools: make([]envelope.ToolSpec, 0, len(raw.Tools))}
	for _, r := range raw.Tools {
		spec, ok := d[string(r)]
		if !ok {
			if err := json.Unmarshal(r, &spec); err != nil {
				return catalogEntry{}, err
			}
			d[string(r)] = spec
		}
		e.Tools = append(e.Tools, spec)
	}
	return e, nil
}

// DefaultCatalogWait bounds a catalogue gather when the caller names no wait.
const DefaultCatalogWait = 300 * time.Millisecond

// Catalog gathers every worker's ToolSpecs. NATS alone cannot say how many
// workers exist, so Catalog reads the worker registry (a JetStream
// key-value bucket every worker registers in, when the server has
// JetStream), asks the whole fleet at once, and returns as soon as every
// registered worker has answered, or when wait (default
// DefaultCatalogWait) runs out. Without a registry it gathers for the
// whole wait and says complete:false: it cannot know.
func (c *Caller) Catalog(ctx context.Context, wait time.Duration) (Catalog, error) {
	if wait <= 0 {
		wait = DefaultCatalogWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// The registry is read while the fleet answers: a server that denies
	// or lacks JetStream must not eat the gather's time.
	var (
		regMu      sync.Mutex
		registered map[string]bool
		regErr     error
		regDone    = make(chan struct{})
	)
	go func() {
		ids, err := c.registeredWorkers(ctx)
		regMu.Lock()
		registered, regErr = ids, err
		regMu.Unlock()
		close(regDone)
	}()
	entries, err := c.gatherCatalog(ctx, regDone, func(got map[string]catalogEntry) bool {
		regMu.Lock()
		defer regMu.Unlock()
		// Fewer answers than registered workers cannot be whole: the
		// scan below then runs only at the end, not once per answer.
		if registered == nil || len(got) < len(registered) {
			return false
		}
		for id := range registered {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	if err != nil {
		return Catalog{}, err
	}
	<-regDone // ends with ctx at the latest
	cat := buildCatalog(entries)
	cat.Complete = registered != nil
	if registered == nil {
		cat.ScopeWarnings = append(cat.ScopeWarnings, fmt.Sprintf(
			"no worker registry (%v): NATS cannot say how many workers exist, so the %d that answered within %s may not be all",
			regErr, len(entries), wait))
	}
	var silent []string
	for id := range registered {
		if _, ok := entries[id]; !ok {
			silent = append(silent, id)
		}
	}
	sort.Strings(silent)
	for _, id := range silent {
		cat.Complete = false
		cat.ScopeWarnings = append(cat.ScopeWarnings, fmt.Sprintf("worker %s is registered but did not answer within %s", id, wait))
	}
	return cat, nil
}

// registeredWorkers lists the registry's worker ids; nil (with the reason)
// when the mesh has no registry.
func (c *Caller) registeredWorkers(ctx context.Context) (map[string]bool, error) {
	if on, _ := c.nc.ConnectedServerJetStream(); !on {
		return nil, errors.New("JetStream is not enabled on this server")
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, c.subjects.RegistryBucket())
	if err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			err = errors.New("JetStream is not enabled on this server")
		}
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, err
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out, nil
}

// gatherCatalog asks every worker for its specs and collects the answers
// until done says the set is whole or ctx ends; done is asked again after
// every answer and when wake closes.
func (c *Caller) gatherCatalog(ctx context.Context, wake <-chan struct{}, done func(map[string]catalogEntry) bool) (map[string]catalogEntry, error) {
	var mu sync.Mutex
	entries := map[string]catalogEntry{}
	changed := make(chan struct{}, 1)
	specs := specDecoder{} // used only by the subscription's one goroutine
	inbox := c.nc.NewRespInbox()
	sub, err := c.nc.Subscribe(inbox, func(m *nats.Msg) {
		e, err := specs.entry(m.Data)
		if err != nil {
			c.log.Debug("malformed catalogue answer ignored", "err", err)
			return
		}
		mu.Lock()
		entries[e.WorkerID] = e
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, c.problems.New(envelope.CodeConnectionLost, err.Error())
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest(c.subjects.Catalog(), inbox, nil); err != nil {
		return nil, c.problems.New(envelope.CodeConnectionLost, err.Error())
	}
	for {
		mu.Lock()
		whole := done(entries)
		mu.Unlock()
		if whole {
			break
		}
		select {
		case <-changed:
			continue
		case <-wake:
			wake = nil
			continue
		case <-ctx.Done():
		}
		break
	}
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]catalogEntry, len(entries))
	for k, v := range entries {
		out[k] = v
	}
	return out, nil
}

func buildCatalog(entries map[string]catalogEntry) Catalog {
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
	cat := Catalog{Tools: []CatalogTool{}, Workers: len(entries)}
	for _, t := range byName {
		sort.Strings(t.Workers)
		cat.Tools = append(cat.Tools, *t)
	}
	sort.Slice(cat.Tools, func(i, j int) bool { return cat.Tools[i].Spec.Name < cat.Tools[j].Spec.Name })
	return cat
}

// Describe returns the spec of tool from one worker hosting it, or
// tool_not_found when none does.
func (c *Caller) Describe(ctx context.Context, tool string) (envelope.ToolSpec, error) {
	if err := envelope.ValidateToolName(tool); err != nil {
		return envelope.ToolSpec{}, c.badToolName(err)
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
