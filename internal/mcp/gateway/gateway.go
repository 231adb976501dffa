package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/toolsearch"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Config configures a Gateway. Caller is required; the rest has defaults.
type Config struct {
	// Caller reaches the mesh.
	Caller *caller.Caller
	// Allow lists the mesh tool names served (path.Match globs such as
	// "fs.*"); empty serves every tool. Deny wins over Allow. Both are
	// enforced on tools/list and on tools/call.
	Allow, Deny []string
	// NamePrefix is put before every mesh tool name in MCP ("mesh_" makes
	// "echo" appear as "mesh_echo"), for hosts that merge several servers.
	NamePrefix string
	// Namespace, when set, serves one namespace as if it were the server
	// behind it: only tools named "<Namespace>.<tool>" are served, under
	// "<tool>" (after NamePrefix), and every other tool is neither listed
	// nor callable. With a bridged MCP server's namespace, a host uses the
	// server through the mesh under its own tool names.
	Namespace string
	// CatalogWait bounds one catalogue gathering (default 500ms).
	CatalogWait time.Duration
	// Settle is how long a burst of fleet changes (catalog.Catalog.Watch) must go
	// quiet before the served tools follow it (default 100ms); the SDK then
	// sends one list_changed for the burst.
	Settle time.Duration
	// PageSize is the tools/list page size (default the SDK's, 1000).
	PageSize int
	// ListTTL is the ttlMs a 2026-07-28 client is told it may cache
	// tools/list for (default 0: revalidate every time, because the fleet
	// can change at any moment and list_changed says when).
	ListTTL time.Duration
	// Progressive serves a large catalogue progressively (MCP's
	// progressive discovery): tools/list holds a search tool
	// (SearchToolName) and the Pinned tools, and every search returns the
	// matching tools' definitions and adds them to tools/list
	// (list_changed), so the client can call them.
	Progressive bool
	// Pinned lists the mesh tools (path.Match globs) a progressive
	// gateway always lists.
	Pinned []string
	// SearchLimit is how many tools one search returns unless the client
	// asks for fewer or more (default DefaultSearchLimit).
	SearchLimit int
	// Tasks marks the mesh tools served as MCP tasks (the
	// io.modelcontextprotocol/tasks extension, durable calls underneath)
	// to 2026-07-28 HTTP clients that declare the extension; see TaskRule.
	Tasks []TaskRule
	// Version is the server version reported to clients (default "dev").
	Version string
	// Logger receives the gateway's logs (default slog.Default()).
	Logger *slog.Logger
}

// Gateway is one MCP server whose tools are the mesh's.
type Gateway struct {
	cfg    Config
	filter filter
	srv    *mcp.Server
	log    *slog.Logger

	mu     sync.Mutex
	served map[string]servedTool // MCP name → what is registered
	// gaps are the scope warnings of the last catalogue applied: the
	// tri-state honest convention, reported on every tools/list.
	gaps []string
	// conflicts describe the served tools for which workers give
	// different specs (tools/list _meta "io.toolmesh/conflicts").
	conflicts []any
	// known is every tool the filter allows in the fleet as last seen
	// (what a search ranks); lastView is the view last applied, and
	// revealed the MCP names searches have added (progressive.go).
	known map[string]catalog.Tool
	// index is the search index of known as last searched, kept while
	// the known tools read the same (it has a lock of its own).
	index    toolsearch.Cache[catalog.Tool]
	lastView fleetView
	revealed map[string]bool
	// surf are the bridged servers' resources, prompts and completions
	// served (surface.go), routes where their URIs go.
	surf   surfaces
	routes routes
	subs   gwSubs
	// logging are the sessions that asked for log messages (unary.go).
	logging logSessions
	// rounds are the 2026-07-28 calls held on their questions (rounds.go).
	rounds *rounds
}

// servedTool is one registered tool and the fingerprint of its spec, so a
// sync re-registers (and notifies) only what really changed.
type servedTool struct {
	mesh        string
	fingerprint string
	list        listing
}

// New builds a gateway. Call Sync before serving so the first tools/list
// is not empty, and Run to follow the fleet.
func New(cfg Config) (*Gateway, error) {
	if cfg.Caller == nil {
		return nil, errors.New("gateway: Config.Caller is required")
	}
	f, err := newFilter(cfg.Allow, cfg.Deny)
	if err != nil {
		return nil, err
	}
	if err := checkPinned(cfg); err != nil {
		return nil, err
	}
	if err := checkTaskRules(cfg.Tasks); err != nil {
		return nil, err
	}
	if cfg.Namespace != "" {
		if err := envelope.ValidateToolName(cfg.Namespace); err != nil {
			return nil, envelope.Problemf(envelope.CodeInvalidConfig, "namespace: %v", err)
		}
		f.namespace = cfg.Namespace + "."
	}
	if cfg.CatalogWait <= 0 {
		cfg.CatalogWait = 500 * time.Millisecond
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 100 * time.Millisecond
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	g := &Gateway{cfg: cfg, rounds: newRounds(), filter: f, log: cfg.Logger, served: map[string]servedTool{},
		known: map[string]catalog.Tool{}, revealed: map[string]bool{}}
	opts := g.serverOptions()
	g.advertiseTasks(opts)
	g.srv = mcp.NewServer(&mcp.Implementation{Name: "toolmesh", Title: "toolmesh MCP gateway", Version: cfg.Version}, opts)
	g.srv.AddReceivingMiddleware(g.honestList, g.surfaceMiddleware, g.describeUnknown, g.noteLogLevel)
	if cfg.Progressive {
		g.addSearchTool()
	}
	return g, nil
}

// serverOptions are the SDK server's options: the capabilities a mesh
// gateway has and the handlers that map them onto the mesh.
func (g *Gateway) serverOptions() *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Instructions: "Tools hosted on a toolmesh (a NATS tool mesh). Failed calls return isError with an RFC 9457 problem as structuredContent; retry_after says when a retry may succeed.",
		Logger:       g.cfg.Logger,
		PageSize:     g.cfg.PageSize,
		// Tools come and go with the fleet: advertise the capability even
		// while no worker is up, so clients listen for list_changed.
		// Resources, prompts and completions are the bridged servers' on
		// the mesh (surface.go), empty while none offers them; logging
		// carries their log messages (log.go).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{Subscribe: true}, Prompts: &mcp.PromptCapabilities{},
			Completions: &mcp.CompletionCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return g.complete(ctx, req)
		},
		SubscribeHandler:   func(ctx context.Context, req *mcp.SubscribeRequest) error { return g.subscribe(ctx, req) },
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error { return g.unsubscribe(ctx, req) },
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = int(g.cfg.ListTTL.Milliseconds())
			// The list depends on the gateway's allow/deny lists and on
			// the mesh identity it lists as: public, unless the caller
			// signed in or brought a bearer (see cacheHints).
			c.CacheScope = cacheHints(req).CacheScope
		},
	}
}

// honestList marks every tools/list result with whether the catalogue
// behind it was complete: "io.toolmesh/complete" in _meta, with the
// named gaps in "io.toolmesh/scope_warnings" when it was not, and the
// served tools whose workers give different specs in
// "io.toolmesh/conflicts" (see markConflict). The tools stand in
// listing order, each written as its listing says (listedPage).
func (g *Gateway) honestList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		g.mu.Lock()
		gaps := append([]string(nil), g.gaps...)
		conflicts := append([]any(nil), g.conflicts...)
		whole := lr.NextCursor == ""
		if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil && p.Cursor != "" {
			whole = false
		}
		page := g.listedPage(lr, whole)
		g.mu.Unlock()
		meta := mcp.Meta{"io.toolmesh/complete": len(gaps) == 0}
		if len(gaps) > 0 {
			meta["io.toolmesh/scope_warnings"] = gaps
		}
		if len(conflicts) > 0 {
			meta["io.toolmesh/conflicts"] = conflicts
		}
		lr.Meta = meta
		return page, nil
	}
}

// Server returns the underlying MCP server (to connect custom transports).
func (g *Gateway) Server() *mcp.Server { return g.srv }

// Run keeps the served tools in step with the fleet until ctx ends:
// catalog.Catalog.Watch reports each tool that appears, changes or goes (a worker
// killed without a goodbye goes within 3 of its heartbeat intervals), and
// once a burst of changes settles the served tools become exactly the
// watched ones. Call Sync first so the first tools/list is not empty.
func (g *Gateway) Run(ctx context.Context) error {
	changes := make(chan catalog.Change)
	go g.follow(ctx, changes)
	live := map[string]catalog.Tool{}
	var settle <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch, ok := <-changes:
			if !ok {
				return nil
			}
			if ch.Kind == catalog.ToolRemoved {
				delete(live, ch.Tool.Spec.Name)
			} else {
				live[ch.Tool.Spec.Name] = ch.Tool
			}
			settle = time.After(g.cfg.Settle)
		case <-settle:
			settle = nil
			g.apply(g.watchedView(ctx, live))
		}
	}
}

// follow copies catalog.Catalog.Watch's changes into changes until ctx ends,
// starting the watch again (after a pause) when it ends with an error.
func (g *Gateway) follow(ctx context.Context, changes chan<- catalog.Change) {
	defer close(changes)
	for ctx.Err() == nil {
		for ch, err := range g.cfg.Caller.Catalog().Watch(ctx) {
			if err != nil {
				g.log.Warn("mcp gateway: fleet watch", "err", err)
				break
			}
			select {
			case changes <- ch:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Sync reads the catalogue once and applies it.
func (g *Gateway) Sync(ctx context.Context) error {
	cat, err := g.cfg.Caller.Catalog().List(ctx, g.cfg.CatalogWait)
	if err != nil {
		return err
	}
	view := fleetView{tools: cat.Tools, gaps: gapsOf(cat), prune: keepMissing}
	if cat.Complete {
		view.prune = pruneMissing
	}
	g.apply(view)
	return nil
}

// fleetView is what the served tools should become.
type fleetView struct {
	tools []catalog.Tool
	// gaps name what the view may be missing (tools/list _meta).
	gaps  []string
	prune pruneRule
}

// pruneRule says whether tools missing from a view stop being served.
type pruneRule int

const (
	// keepMissing: the view may miss live tools (an incomplete
	// catalogue), so it only adds and replaces.
	keepMissing pruneRule = iota
	// pruneMissing: the view is authoritative (a complete catalogue, or
	// Watch's presence-based view): a missing tool is gone.
	pruneMissing
)

// watchedView is Watch's live tools, with the gaps the catalogue reports
// (a registered worker that does not answer, or no registry at all).
func (g *Gateway) watchedView(ctx context.Context, live map[string]catalog.Tool) fleetView {
	view := fleetView{prune: pruneMissing}
	for _, t := range live {
		view.tools = append(view.tools, t)
	}
	if cat, err := g.cfg.Caller.Catalog().List(ctx, g.cfg.CatalogWait); err != nil {
		view.gaps = []string{"catalogue: " + err.Error()}
	} else {
		view.gaps = gapsOf(cat)
	}
	return view
}

// gapsOf is what an incomplete catalogue says it may miss.
func gapsOf(cat catalog.Listing) []string {
	if cat.Complete {
		return nil
	}
	if len(cat.ScopeWarnings) == 0 {
		return []string{"the catalogue was incomplete"}
	}
	return cat.ScopeWarnings
}

// apply registers, replaces or removes MCP tools so they match view. The
// SDK debounces the resulting list_changed notifications into one per
// burst.
func (g *Gateway) apply(view fleetView) {
	want := map[string]*mcp.Tool{}
	meshName := map[string]string{}
	relay := map[string]relayKind{}
	lists := map[string]listing{}
	var conflicts []any
	surf := surfaces{}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.remember(view)
	for _, ct := range view.tools {
		if !g.filter.allows(ct.Spec.Name) || surf.add(&ct.Spec) || !g.listed(ct.Spec.Name, g.toolName(ct.Spec.Name)) {
			continue
		}
		t, err := servedDef(g.toolName(ct.Spec.Name), ct)
		if err == nil && g.cfg.Progressive && t.Name == g.cfg.NamePrefix+SearchToolName {
			err = errors.New("its name is the search tool's")
		}
		if err != nil {
			g.log.Warn("mcp gateway: tool not served", "tool", ct.Spec.Name, "err", err)
			continue
		}
		want[t.Name] = t
		if c, ok := t.Meta[conflictMetaKey]; ok {
			conflicts = append(conflicts, c)
		}
		meshName[t.Name] = ct.Spec.Name
		relay[t.Name] = relayOf(ct.Spec)
		lists[t.Name] = g.listingOf(t.Name, ct)
	}
	g.gaps, g.conflicts = view.gaps, conflicts
	g.applySurfaces(surf, view.prune)
	var gone []string
	if view.prune == pruneMissing {
		for name := range g.served {
			if _, ok := want[name]; !ok {
				gone = append(gone, name)
				delete(g.served, name)
			}
		}
	}
	if len(gone) > 0 {
		g.srv.RemoveTools(gone...)
	}
	for name, t := range want {
		fp := fingerprint(t)
		if relay[name].unaryFits { // a change of binding changes how it is called
			fp += " unary"
		}
		fp += " spec " + relay[name].digest // calls name the spec served

		if old, ok := g.served[name]; ok && old.fingerprint == fp {
			continue
		}
		g.served[name] = servedTool{mesh: meshName[name], fingerprint: fp, list: lists[name]}
		g.srv.AddTool(t, g.callHandler(meshName[name], t, relay[name]))
	}
}

// remember records view as the last applied and its allowed tools as
// known (all of them for an authoritative view, added and replaced for
// one that may miss tools); surface tools are not tools to search. Call
// with g.mu held.
func (g *Gateway) remember(view fleetView) {
	g.lastView = view
	if view.prune == pruneMissing {
		clear(g.known)
	}
	for _, ct := range view.tools {
		if _, _, surface := wire.SplitMCPSurface(ct.Spec.Name, ct.Spec.Tags); g.filter.allows(ct.Spec.Name) && !surface {
			g.known[ct.Spec.Name] = ct
		}
	}
}

// applySurfaces replaces the surfaces served (or, from a view that may
// miss some, adds to them). Called with g.mu held.
func (g *Gateway) applySurfaces(surf surfaces, prune pruneRule) {
	if prune == keepMissing {
		for ns, ops := range g.surf {
			if _, ok := surf[ns]; !ok {
				surf[ns] = ops
			}
		}
	}
	g.surf = surf
}

// Tools returns the MCP names currently served, sorted, for diagnostics.
func (g *Gateway) Tools() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.served))
	for n := range g.served {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
