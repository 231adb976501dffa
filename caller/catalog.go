package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// CatalogTool is one tool as the catalogue sees it across the fleet.
type CatalogTool struct {
	Spec envelope.ToolSpec `json:"spec"`
	// Instances counts the workers hosting the tool.
	Instances int      `json:"instances"`
	Workers   []string `json:"workers"`
	// Conflicts lists the other specs some workers give for the same
	// name (Spec is the one most of them give): a conflict to resolve,
	// shown rather than one spec or another by chance.
	Conflicts []ToolVariant `json:"conflicts,omitempty"`
}

// ToolVariant is one spec given for a tool name, and the workers giving it.
type ToolVariant struct {
	Spec    envelope.ToolSpec `json:"spec"`
	Workers []string          `json:"workers"`
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

// DefaultCatalogWait bounds a catalogue gather (a mesh without a worker
// registry) when the caller names no wait.
const DefaultCatalogWait = 300 * time.Millisecond

// defaultRegistryWait bounds reading the registry and fetching unknown
// spec sets when the caller names no wait; both end as soon as they are
// done, so the bound is only reached when JetStream or workers are stuck.
const defaultRegistryWait = 10 * time.Second

// Catalog returns every worker's tools, one entry per tool with the
// workers hosting it, leaving out the tools this caller's NATS identity
// may not call: the server's own record of the user's publish permissions
// decides (see docs/protocol.md, "A tenant's view"), so a tenant sees its
// own catalogue and never another's tools. When the server has JetStream it reads the worker
// registry — one key per worker naming its spec set by digest — in one
// pass, and asks one worker for each spec set it has not seen before: one
// round trip for the registry at any fleet size, and complete:true when
// every registered worker's tools are in. Without a registry it asks the
// whole fleet at once and gathers answers for the whole wait (0:
// DefaultCatalogWait; with a registry, 0 bounds the read by 10s, and it
// ends as soon as it is done), and says complete:false: NATS cannot say
// how many workers exist.
func (c *Caller) Catalog(ctx context.Context, wait time.Duration) (Catalog, error) {
	entries, warnings, complete, err := c.catalogEntries(ctx, wait)
	if err != nil {
		return Catalog{}, err
	}
	cat := buildCatalog(entries)
	cat.ScopeWarnings, cat.Complete = warnings, complete
	return cat, nil
}

// catalogEntries gathers every worker's entry as Catalog describes, with
// the warnings that say what may be missing.
func (c *Caller) catalogEntries(ctx context.Context, wait time.Duration) (map[string]catalogEntry, []string, bool, error) {
	bound := wait
	if bound <= 0 {
		bound = defaultRegistryWait
	}
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	perms := c.permissions(rctx)
	may := c.callableBy(perms)
	var reg map[string]registered
	regErr := errNoJetStreamAPI
	if c.registryReadable(perms) {
		reg, regErr = c.registrySnapshot(rctx)
	}
	if reg != nil {
		entries, warnings := c.registryEntries(rctx, reg, bound)
		complete := len(warnings) == 0
		entries = visibleEntries(entries, may)
		return entries, append(warnings, scoped(entries)...), complete, nil
	}
	if ctx.Err() != nil {
		return nil, nil, false, c.problems.Rebase(envelope.AsProblem(ctx.Err(), envelope.CodeTimeout))
	}
	if wait <= 0 {
		wait = DefaultCatalogWait
	}
	gctx, gcancel := context.WithTimeout(ctx, wait)
	defer gcancel()
	entries, err := c.gatherCatalog(gctx)
	if err != nil {
		return nil, nil, false, err
	}
	entries = visibleEntries(entries, may)
	warnings := []string{fmt.Sprintf(
		"no worker registry (%v): NATS cannot say how many workers exist, so the %d that answered within %s may not be all",
		regErr, len(entries), wait)}
	warnings = append(warnings, c.confirmSenders(ctx, entries)...)
	return entries, append(warnings, scoped(entries)...), false, nil
}

// staleAfter is how long past its refresh period a registry key may go
// unrewritten before its worker is taken for gone (kill -9 leaves a key
// until the bucket's TTL); the slack absorbs clock skew between hosts.
func staleAfter(b wire.Beacon) time.Duration {
	refresh := time.Duration(b.RefreshMS) * time.Millisecond
	if refresh <= 0 {
		refresh = max(mesh.DefaultRegistryTTL/3, time.Second)
	}
	return 2*refresh + 5*time.Second
}

// registryEntries gives the entries of the registered workers: fresh keys
// grouped by spec set, each unknown set fetched once; the warnings name
// every worker left out.
func (c *Caller) registryEntries(ctx context.Context, reg map[string]registered, wait time.Duration) (map[string]catalogEntry, []string) {
	now := time.Now()
	bySet := map[string][]string{} // digest ("" + id for a worker without one) → worker ids
	var warnings []string
	for id, r := range reg {
		if age := now.Sub(r.written); age > staleAfter(r.beacon) {
			warnings = append(warnings, fmt.Sprintf("worker %s has not refreshed its registry key for %s: it may be gone, and is not listed", id, age.Round(time.Second)))
			continue
		}
		key := r.beacon.Specs
		if key == "" {
			key = "worker:" + id
		}
		bySet[key] = append(bySet[key], id)
	}
	for _, ids := range bySet {
		slices.Sort(ids) // a set is asked of its workers in id order
	}
	sets := c.resolveSets(ctx, bySet)
	entries := make(map[string]catalogEntry, len(reg))
	for key, ids := range bySet {
		specs, ok := sets[key]
		for _, id := range ids {
			if !ok {
				warnings = append(warnings, fmt.Sprintf("worker %s is registered but its tools could not be fetched within %s", id, wait))
				continue
			}
			entries[id] = catalogEntry{WorkerID: id, Tools: specs, IntervalMS: reg[id].beacon.IntervalMS}
		}
	}
	sort.Strings(warnings)
	return entries, warnings
}

// resolveSets returns every spec set of bySet, fetching those not yet
// cached (askSets: one request per distinct set); a set that no worker
// would give is left out.
func (c *Caller) resolveSets(ctx context.Context, bySet map[string][]string) map[string][]envelope.ToolSpec {
	out := make(map[string][]envelope.ToolSpec, len(bySet))
	need := map[string][]string{}
	for key, ids := range bySet {
		if specs, ok := c.specs.get(key); ok {
			out[key] = specs
		} else {
			need[key] = ids
		}
	}
	c.askSets(ctx, need, out)
	return out
}

// gatherCatalog asks every worker for its specs and collects the answers
// until ctx ends (a mesh without a registry cannot know when all are in).
func (c *Caller) gatherCatalog(ctx context.Context) (map[string]catalogEntry, error) {
	var mu sync.Mutex
	entries := map[string]catalogEntry{}
	// NewInbox, not NewRespInbox: a response inbox also matches the
	// connection's request wildcard, and every answer would arrive twice.
	inbox := c.nc.NewInbox()
	sub, err := c.nc.Subscribe(inbox, func(m *nats.Msg) {
		e, err := c.verifiedEntry(m.Data, "")
		if err != nil || !wire.ValidWorkerID(e.WorkerID) {
			c.log.Debug("malformed catalogue answer ignored", "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		entries[e.WorkerID] = e
	})
	if err != nil {
		return nil, c.problems.New(envelope.CodeConnectionLost, err.Error())
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest(c.subjects.Catalog(), inbox, nil); err != nil {
		return nil, c.problems.New(envelope.CodeConnectionLost, err.Error())
	}
	<-ctx.Done()
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(entries), nil
}

// buildCatalog lists each tool once, with the workers hosting it. Workers
// that disagree about a tool's spec are a conflict, shown as one: the
// spec most workers give (ties: the lowest worker id's) is the tool's, and
// every other is listed in Conflicts — never one or the other by chance.
func buildCatalog(entries map[string]catalogEntry) Catalog {
	// Workers of one spec set share its decoded specs (one slice), so a
	// spec's address names it: only a tool given by more than one set is
	// compared by its JSON, and each set's tools are visited once.
	byName := map[string]map[*envelope.ToolSpec][]string{} // name → spec → its workers
	for _, g := range specGroups(entries) {
		for i := range g.tools {
			s := &g.tools[i]
			vs := byName[s.Name]
			if vs == nil {
				vs = map[*envelope.ToolSpec][]string{}
				byName[s.Name] = vs
			}
			vs[s] = append(vs[s], g.workers...)
		}
	}
	cat := Catalog{Tools: make([]CatalogTool, 0, len(byName)), Workers: len(entries)}
	for _, vs := range byName {
		cat.Tools = append(cat.Tools, catalogTool(variantsOf(vs)))
	}
	sort.Slice(cat.Tools, func(i, j int) bool { return cat.Tools[i].Spec.Name < cat.Tools[j].Spec.Name })
	return cat
}

// specGroup is the workers (sorted) sharing one decoded spec set.
type specGroup struct {
	tools   []envelope.ToolSpec
	workers []string
}

// specGroups groups entries by the spec slice they share.
func specGroups(entries map[string]catalogEntry) []*specGroup {
	type slice struct {
		first *envelope.ToolSpec
		n     int
	}
	index := map[slice]*specGroup{}
	var out []*specGroup
	for _, e := range entries {
		if len(e.Tools) == 0 {
			continue
		}
		key := slice{&e.Tools[0], len(e.Tools)}
		g := index[key]
		if g == nil {
			g = &specGroup{tools: e.Tools}
			index[key] = g
			out = append(out, g)
		}
		g.workers = append(g.workers, e.WorkerID)
	}
	for _, g := range out {
		slices.Sort(g.workers)
	}
	return out
}

// variantsOf merges one tool's specs that are equal in JSON (copies from
// different spec sets) into variants, keyed by that JSON.
func variantsOf(vs map[*envelope.ToolSpec][]string) map[string]*ToolVariant {
	out := make(map[string]*ToolVariant, len(vs))
	for s, ids := range vs {
		key := ""
		if len(vs) > 1 {
			b, _ := json.Marshal(*s)
			key = string(b)
		}
		v := out[key]
		if v == nil {
			v = &ToolVariant{Spec: *s}
			out[key] = v
		}
		v.Workers = append(v.Workers, ids...)
	}
	return out
}

// catalogTool makes one tool's entry from its variants (spec → workers).
func catalogTool(vs map[string]*ToolVariant) CatalogTool {
	variants := make([]ToolVariant, 0, len(vs))
	for _, v := range vs {
		sortOnce(v.Workers)
		variants = append(variants, *v)
	}
	sort.Slice(variants, func(i, j int) bool {
		if len(variants[i].Workers) != len(variants[j].Workers) {
			return len(variants[i].Workers) > len(variants[j].Workers)
		}
		return variants[i].Workers[0] < variants[j].Workers[0]
	})
	t := CatalogTool{Spec: variants[0].Spec}
	for _, v := range variants {
		t.Instances += len(v.Workers)
		t.Workers = append(t.Workers, v.Workers...)
	}
	sortOnce(t.Workers)
	if len(variants) > 1 {
		t.Conflicts = variants[1:]
	}
	return t
}

// sortOnce sorts ids unless they are sorted already (a tool given by one
// spec set has its set's sorted workers).
func sortOnce(ids []string) {
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
}

// Describe returns the spec of tool, or tool_not_found when no worker
// hosts it, or forbidden when this caller's NATS identity may not call it
// (whether or not a worker hosts it). The answer never depends on which
// worker happens to answer: the tool's subject is asked first (one
// request, so a tool nobody hosts is tool_not_found at once, and a worker
// that has just started is found before it reaches the registry), then
// the catalogue (see Catalog, whose scope rules apply) decides. When
// workers give different specs for the name, Describe returns the spec
// most of them give (ties: the lowest worker id's), always the same, and
// with it a tool_conflict Problem whose extension "conflicts" lists every
// spec given and its workers: a caller must not act on a description
// that another worker contradicts (docs/protocol.md §14.1).
func (c *Caller) Describe(ctx context.Context, tool string) (envelope.ToolSpec, error) {
	if err := envelope.ValidateToolName(tool); err != nil {
		return envelope.ToolSpec{}, c.badToolName(err)
	}
	if !c.callable(ctx)(tool) {
		return envelope.ToolSpec{}, c.notCallable(tool)
	}
	answered, err := c.describeOne(ctx, tool)
	if err != nil {
		return envelope.ToolSpec{}, err
	}
	entries, warnings, _, err := c.catalogEntries(ctx, 0)
	if err != nil {
		return envelope.ToolSpec{}, err
	}
	t, listed := catalogToolNamed(entries, tool)
	switch {
	case !listed && outOfScope(warnings, tool):
		// Offered only by workers that may not host it (§14.1, "Scope").
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeToolNotFound, fmt.Sprintf("no worker may host tool %q: only workers of a pool outside its namespace offer it", tool))
	case !listed:
		// Only a worker not yet in the catalogue hosts it: its answer is
		// the one there is.
		return answered, nil
	}
	if !slices.ContainsFunc(append([]ToolVariant{{Spec: t.Spec}}, t.Conflicts...), func(v ToolVariant) bool { return sameSpec(v.Spec, answered) }) {
		t.Conflicts = append(t.Conflicts, ToolVariant{Spec: answered, Workers: []string{}})
	}
	if len(t.Conflicts) > 0 {
		return t.Spec, c.conflictProblem(t)
	}
	return t.Spec, nil
}

// describeOne asks the tool's subject, which one worker hosting it answers.
func (c *Caller) describeOne(ctx context.Context, tool string) (envelope.ToolSpec, error) {
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

// catalogToolNamed is the catalogue's entry for one tool (see
// buildCatalog), and false when no entry hosts it.
func catalogToolNamed(entries map[string]catalogEntry, name string) (CatalogTool, bool) {
	vs := map[string]*ToolVariant{}
	for _, e := range entries {
		for _, s := range e.Tools {
			if s.Name != name {
				continue
			}
			key, _ := json.Marshal(s)
			v := vs[string(key)]
			if v == nil {
				v = &ToolVariant{Spec: s}
				vs[string(key)] = v
			}
			v.Workers = append(v.Workers, e.WorkerID)
		}
	}
	if len(vs) == 0 {
		return CatalogTool{}, false
	}
	return catalogTool(vs), true
}

// conflictProblem says that workers give different specs for t: every
// spec given, the one returned first, each with its workers (none for a
// worker that answered on the tool's subject but is not in the catalogue).
func (c *Caller) conflictProblem(t CatalogTool) *envelope.Problem {
	variants := append([]ToolVariant{{Spec: t.Spec, Workers: servedBy(t)}}, t.Conflicts...)
	return c.problems.New(envelope.CodeToolConflict, fmt.Sprintf(
		"workers give %d different specs for tool %q, so a call may reach any of them; the spec returned is the one most of them give (ties: the lowest worker id's), and the extension conflicts lists them all",
		len(variants), t.Spec.Name)).WithExtension("conflicts", variants)
}

// servedBy lists the workers giving t's own spec: its workers less those
// of its conflicts.
func servedBy(t CatalogTool) []string {
	other := map[string]bool{}
	for _, v := range t.Conflicts {
		for _, w := range v.Workers {
			other[w] = true
		}
	}
	out := []string{}
	for _, w := range t.Workers {
		if !other[w] {
			out = append(out, w)
		}
	}
	return out
}
