package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/toolsearch"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Config configures a Catalog. The zero value is usable.
type Config struct {
	// Prefix is the mesh's subject prefix (default "toolmesh").
	Prefix string
	// Heartbeat is the interval Watch assumes for a worker that claims
	// none, and paces Watch's expiry checks by (default
	// 1s).
	Heartbeat time.Duration
	// ProblemBaseURI is the base of problem type URIs.
	ProblemBaseURI string
	// Logger receives debug notes on answers ignored and fetches that
	// failed (default slog.Default()).
	Logger *slog.Logger
}

// Catalog reads the mesh's catalogue over one NATS connection: List,
// Watch, Describe, Search and SampleFleet. It keeps what it learns across
// calls (spec sets by digest, the identity's permissions, the search
// index), so it is made once and shared; it is safe for concurrent use
// and holds no goroutine or subscription between calls.
type Catalog struct {
	nc       *nats.Conn
	cfg      Config
	subjects wire.Subjects
	problems problembase.Registry
	log      *slog.Logger
	// specs caches decoded spec sets by digest (specs.go).
	specs specCache
	// search keeps the search index of the last listing (package toolsearch).
	search toolsearch.Cache[Tool]
	// trusted holds the (spec set, pool) pairs confirmed on a worker's own
	// catalogue subject (poolscope.go).
	trusted trustedSets
	// perms caches what this identity may call (tenantview.go).
	perms permView
	// feed hears the permissions violations the server reports on the
	// connection (violations.go).
	feed violationFeed
	// known keeps the names of the tools last read (suggest.go).
	known knownNames
}

// New makes a catalogue reader on nc.
func New(nc *nats.Conn, cfg Config) *Catalog {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = wire.DefaultHeartbeat
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Catalog{nc: nc, cfg: cfg, subjects: wire.Subjects{Prefix: cfg.Prefix},
		problems: problembase.Registry{BaseURI: cfg.ProblemBaseURI}, log: cfg.Logger}
}

// catalogEntry is one worker's catalogue answer.
type catalogEntry = wire.CatalogEntry[[]envelope.ToolSpec]

// defaultWait is List's wait when it is given none: with a worker
// registry it bounds reading it and fetching the spec sets not yet known
// (both end as soon as they are done, so it is reached only when
// JetStream or workers are stuck; it leaves room for every round of spec
// set requests); without one it is how long answers are gathered.
const defaultWait = 3 * time.Second

// Describe, Search and Watch's first pass take no wait: they read a
// registry bounded by innerRegistryWait, ending as soon as it is done,
// and without one gather answers for innerGatherWait, short because
// they answer a question in the middle of other work.
const (
	innerRegistryWait = 10 * time.Second
	innerGatherWait   = 300 * time.Millisecond
)

// List returns every worker's tools, one entry per tool with the workers
// hosting it, leaving out the tools this NATS identity may not call: the
// server's own record of the user's publish permissions decides (see
// docs/protocol.md, "A tenant's view"), so a tenant sees its own
// catalogue and never another's tools. When the server has JetStream it
// reads the worker registry — one key per worker naming its spec set by
// digest — in one pass, and asks one worker for each spec set it has not
// seen before: one round trip for the registry at any fleet size, and
// complete:true when every registered worker's tools are in; wait bounds
// that, and it ends as soon as it is done. Without a registry it asks the
// whole fleet at once, gathers answers for the whole wait, and says
// complete:false: NATS cannot say how many workers exist. A wait of 0
// means 3s (see defaultWait).
func (c *Catalog) List(ctx context.Context, wait time.Duration) (Listing, error) {
	if wait <= 0 {
		wait = defaultWait
	}
	return c.listing(ctx, wait, wait)
}

// listing is the listing of entries(ctx, bound, gather).
func (c *Catalog) listing(ctx context.Context, bound, gather time.Duration) (Listing, error) {
	entries, warnings, complete, err := c.entries(ctx, bound, gather)
	if err != nil {
		return Listing{}, err
	}
	l := buildListing(entries)
	l.ScopeWarnings, l.Complete = warnings, complete
	return l, nil
}

// entries gathers every worker's entry as List describes, with the
// warnings that say what may be missing, keeping only the tools this
// identity may call (viewEntries): bound bounds a registry's listing, and
// without a registry answers are gathered for gather.
func (c *Catalog) entries(ctx context.Context, bound, gather time.Duration) (map[string]catalogEntry, []string, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	a := c.access(rctx)
	var reg map[string]registered
	regErr := errNoJetStreamAPI
	if c.registryReadable(a) {
		reg, regErr = c.registryRead(rctx, a)
	}
	if reg != nil {
		entries, warnings := c.registryEntries(rctx, reg, bound)
		complete := len(warnings) == 0
		entries, notes, decided := c.viewEntries(ctx, entries)
		warnings = append(warnings, notes...)
		warnings = append(warnings, scoped(entries)...)
		c.known.remember(a.epoch, entries)
		return entries, warnings, complete && decided, nil
	}
	if ctx.Err() != nil {
		return nil, nil, false, c.problems.Rebase(envelope.AsProblem(ctx.Err(), envelope.CodeTimeout))
	}
	gctx, gcancel := context.WithTimeout(ctx, gather)
	defer gcancel()
	entries, err := c.gatherCatalog(gctx)
	if err != nil {
		return nil, nil, false, err
	}
	entries, notes, _ := c.viewEntries(ctx, entries)
	warnings := []string{fmt.Sprintf(
		"no worker registry (%v): NATS cannot say how many workers exist, so the %d that answered within %s may not be all",
		regErr, len(entries), gather)}
	warnings = append(warnings, notes...)
	warnings = append(warnings, c.confirmSenders(ctx, entries)...)
	warnings = append(warnings, scoped(entries)...)
	c.known.remember(a.epoch, entries)
	return entries, warnings, false, nil
}

// staleAfter is how long past its refresh period a registry key may go
// unrewritten before its worker is taken for gone (kill -9 leaves a key
// until the bucket's TTL); the slack absorbs clock skew between hosts.
func staleAfter(b wire.Beacon) time.Duration {
	refresh := time.Duration(b.RefreshMS) * time.Millisecond
	if refresh <= 0 {
		refresh = max(wire.DefaultRegistryTTL/3, time.Second)
	}
	return 2*refresh + 5*time.Second
}

// registryEntries gives the entries of the registered workers: fresh keys
// grouped by spec set, each unknown set fetched once; the warnings name
// every worker left out.
func (c *Catalog) registryEntries(ctx context.Context, reg map[string]registered, wait time.Duration) (map[string]catalogEntry, []string) {
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
func (c *Catalog) resolveSets(ctx context.Context, bySet map[string][]string) map[string][]envelope.ToolSpec {
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
func (c *Catalog) gatherCatalog(ctx context.Context) (map[string]catalogEntry, error) {
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
