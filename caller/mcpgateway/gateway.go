// Package mcpgateway serves the mesh's tools to MCP clients: tools/list
// comes from the mesh catalogue, tools/call becomes a mesh call. It is
// built on the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk),
// which carries the protocol itself — both the 2025-11-25 session model
// (initialize) and the stateless 2026-07-28 model (server/discover,
// subscriptions/listen, resultType, ttlMs/cacheScope) — so this package
// only maps mesh concepts onto it.
//
//	g, _ := mcpgateway.New(mcpgateway.Config{Caller: c})
//	_ = g.Sync(ctx)               // the first tool list
//	go g.Run(ctx)                 // keeps it in step with the fleet
//	_ = g.ServeStdio(ctx, os.Stdin, os.Stdout)
package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
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
	// CatalogWait bounds one catalogue gathering (default 500ms).
	CatalogWait time.Duration
	// Refresh is how often the fleet is re-read for changes (default 2s).
	Refresh time.Duration
	// PageSize is the tools/list page size (default the SDK's, 1000).
	PageSize int
	// ListTTL is the ttlMs a 2026-07-28 client is told it may cache
	// tools/list for (default 0: revalidate every time, because the fleet
	// can change at any moment and list_changed says when).
	ListTTL time.Duration
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
}

// servedTool is one registered tool and the fingerprint of its spec, so a
// sync re-registers (and notifies) only what really changed.
type servedTool struct {
	mesh        string
	fingerprint string
}

// New builds a gateway. Call Sync before serving so the first tools/list
// is not empty, and Run to follow the fleet.
func New(cfg Config) (*Gateway, error) {
	if cfg.Caller == nil {
		return nil, errors.New("mcpgateway: Config.Caller is required")
	}
	f, err := newFilter(cfg.Allow, cfg.Deny)
	if err != nil {
		return nil, err
	}
	if cfg.CatalogWait <= 0 {
		cfg.CatalogWait = 500 * time.Millisecond
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	g := &Gateway{cfg: cfg, filter: f, log: cfg.Logger, served: map[string]servedTool{}}
	ttl := int(cfg.ListTTL.Milliseconds())
	g.srv = mcp.NewServer(&mcp.Implementation{Name: "toolmesh", Title: "toolmesh MCP gateway", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "Tools hosted on a toolmesh (a NATS tool mesh). Failed calls return isError with an RFC 9457 problem as structuredContent; retry_after says when a retry may succeed.",
		Logger:       cfg.Logger,
		PageSize:     cfg.PageSize,
		// Tools come and go with the fleet: advertise the capability even
		// while no worker is up, so clients listen for list_changed.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = ttl
			// The list depends on the gateway's allow/deny lists, not on
			// who asks; a bearer changes what a call may do, not the list.
			c.CacheScope = "public"
		},
	})
	g.srv.AddReceivingMiddleware(g.honestList)
	return g, nil
}

// honestList marks every tools/list result with whether the catalogue
// behind it was complete: "io.toolmesh/complete" in _meta, with the
// named gaps in "io.toolmesh/scope_warnings" when it was not.
func (g *Gateway) honestList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		g.mu.Lock()
		gaps := append([]string(nil), g.gaps...)
		g.mu.Unlock()
		meta := mcp.Meta{"io.toolmesh/complete": len(gaps) == 0}
		if len(gaps) > 0 {
			meta["io.toolmesh/scope_warnings"] = gaps
		}
		lr.Meta = meta
		return lr, nil
	}
}

// Server returns the underlying MCP server (to connect custom transports).
func (g *Gateway) Server() *mcp.Server { return g.srv }

// ServeStdio serves one MCP session over r and w (newline-delimited
// JSON-RPC) until the client closes r or ctx ends.
func (g *Gateway) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	err := g.srv.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Run keeps the served tools in step with the fleet until ctx ends,
// applying every changed catalogue watchFleet yields. Call Sync first so
// the first tools/list is not empty.
func (g *Gateway) Run(ctx context.Context) error {
	for cat, err := range g.watchFleet(ctx) {
		if err != nil {
			g.log.Warn("mcp gateway: fleet watch", "err", err)
			continue
		}
		g.apply(cat)
	}
	return nil
}

// Sync reads the catalogue once and applies it.
func (g *Gateway) Sync(ctx context.Context) error {
	cat, err := g.cfg.Caller.Catalog(ctx, g.cfg.CatalogWait)
	if err != nil {
		return err
	}
	g.apply(cat)
	return nil
}

// apply registers, replaces or removes MCP tools so they match cat. The
// SDK debounces the resulting list_changed notifications into one per
// burst. An incomplete catalogue (a worker that answered the ping but not
// the catalogue request) only adds tools: it cannot prove one is gone.
func (g *Gateway) apply(cat caller.Catalog) {
	want := map[string]*mcp.Tool{}
	meshName := map[string]string{}
	for _, ct := range cat.Tools {
		if !g.filter.allows(ct.Spec.Name) {
			continue
		}
		t, err := mcpTool(g.cfg.NamePrefix, ct.Spec)
		if err != nil {
			g.log.Warn("mcp gateway: tool not served", "tool", ct.Spec.Name, "err", err)
			continue
		}
		want[t.Name] = t
		meshName[t.Name] = ct.Spec.Name
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gaps = nil
	if !cat.Complete {
		g.gaps = append(g.gaps, cat.ScopeWarnings...)
		if len(g.gaps) == 0 {
			g.gaps = []string{"the catalogue was incomplete"}
		}
	}
	var gone []string
	if cat.Complete {
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
		if old, ok := g.served[name]; ok && old.fingerprint == fp {
			continue
		}
		g.served[name] = servedTool{mesh: meshName[name], fingerprint: fp}
		g.srv.AddTool(t, g.callHandler(meshName[name]))
	}
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

// watchFleet yields the catalogue each time the fleet may have changed,
// until ctx ends.
//
// It is the ONE place that knows how fleet changes are detected. Today it
// re-reads the catalogue every Config.Refresh and yields it when the set
// of (worker, tool spec) pairs or its completeness differs from the last
// one yielded; the catalogue yielded is the one compared, so no change can
// fall between a check and its application. Once caller.Caller.Watch
// exists this becomes a loop over Watch that reads and yields the
// catalogue per change, and nothing else moves.
func (g *Gateway) watchFleet(ctx context.Context) iter.Seq2[caller.Catalog, error] {
	return func(yield func(caller.Catalog, error) bool) {
		tick := time.NewTicker(g.cfg.Refresh)
		defer tick.Stop()
		last := ""
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cat, err := g.cfg.Caller.Catalog(ctx, g.cfg.CatalogWait)
			if err != nil {
				if ctx.Err() != nil || !yield(caller.Catalog{}, fmt.Errorf("catalogue: %w", err)) {
					return
				}
				continue
			}
			if fp := fleetFingerprint(cat); fp != last {
				last = fp
				if !yield(cat, nil) {
					return
				}
			}
		}
	}
}
