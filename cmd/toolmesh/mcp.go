package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/gcfloor"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

// mcpFlags are the flags of `toolmesh mcp`.
type mcpFlags struct {
	http        string
	tools, deny string
	namePrefix  string
	namespace   string
	bearerEnv   string
	bearer      string // read from bearerEnv by checkHTTP
	authIssuer  string
	authAud     string
	authScopes  []string
	asPerson    bool
	maxPeople   int
	origins     []string
	maxBody     int64
	settle      time.Duration
	wait        time.Duration
	grace       time.Duration
	progressive bool
	pinned      string
	searchLimit int
	heapFloor   uint64 // MiB
	tasks       []string
	taskRule    []gateway.TaskRule // parsed from tasks by taskRules
}

func newMCPCmd(g *globals) *cobra.Command {
	var f mcpFlags
	cmd := usage.Command("mcp [--http ADDR]", "Serve the mesh's tools to MCP clients over stdio (default) or streamable HTTP",
		func(cmd *cobra.Command) error {
			if err := f.taskRules(); err != nil {
				return err
			}
			if f.http != "" {
				if err := f.checkHTTP(); err != nil {
					return err
				}
			}
			// The go-sdk allocates about 240 KiB per request (a fresh 32 KiB
			// buffer for each JSON value it decodes): under Go's 4 MiB
			// minimum heap goal that is a collection every ~17 calls.
			floor := gcfloor.Start(f.heapFloor << 20)
			defer floor.Stop()
			if f.asPerson {
				return runMCPPeople(cmd.Context(), f, g)
			}
			c, done, err := g.newCaller(cmd, "mcp")
			if err != nil {
				return err
			}
			defer done()
			return runMCP(cmd.Context(), c, f, g)
		})
	fl := cmd.Flags()
	fl.StringVar(&f.http, "http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8080) instead of stdio")
	fl.StringVar(&f.tools, "tools", "", "comma-separated tool names or globs to serve, e.g. 'fs.*,git.status' (default: all)")
	fl.StringVar(&f.deny, "deny", "", "comma-separated tool names or globs never to serve or call, e.g. 'fs.delete'")
	fl.StringVar(&f.namespace, "namespace", "", "serve only the tools NS.* under their names without \"NS.\" (one bridged MCP server as itself); refuse every other tool")
	fl.StringVar(&f.namePrefix, "name-prefix", "", "prefix every tool name with this (for hosts that merge several servers)")
	fl.BoolVar(&f.progressive, "progressive", false, "serve a large catalogue progressively: list a search tool (search_tools) and the --pin tools; each search adds the tools it finds")
	fl.StringVar(&f.pinned, "pin", "", "with --progressive: comma-separated tool names or globs always listed")
	fl.IntVar(&f.searchLimit, "search-limit", 10, "with --progressive: how many tools one search returns unless the client asks otherwise")
	fl.StringVar(&f.bearerEnv, "bearer-env", "", "HTTP: name of an environment variable holding the bearer clients must present; it is forwarded to tools")
	fl.StringVar(&f.authIssuer, "auth-issuer", "", "HTTP: act as an OAuth resource server for this OpenID issuer URL: every request needs a bearer JWT it signed (with --auth-audience)")
	fl.StringVar(&f.authAud, "auth-audience", "", "HTTP: with --auth-issuer, this endpoint's public URI (e.g. https://mcp.example.com/mcp): tokens must name it in aud")
	fl.StringSliceVar(&f.authScopes, "auth-scope", nil, "HTTP: with --auth-issuer, a scope every token must hold (repeatable; 403 insufficient_scope otherwise)")
	fl.BoolVar(&f.asPerson, "auth-as-person", false, "HTTP: with --auth-issuer, connect to the mesh as each person, presenting their token as the NATS token for the server's auth callout (toolmesh authcallout) to map; no connection of the gateway's own")
	fl.IntVar(&f.maxPeople, "auth-max-people", 256, "HTTP: with --auth-as-person, how many people stay connected at once (the one idle longest is disconnected past it)")
	fl.StringSliceVar(&f.origins, "allow-origin", nil, "HTTP: browser origin accepted besides localhost (repeatable)")
	fl.Int64Var(&f.maxBody, "max-body", 4<<20, "HTTP: largest request body in bytes")
	fl.DurationVar(&f.settle, "settle", 100*time.Millisecond, "how long a burst of fleet changes must go quiet before the tool list follows it")
	fl.DurationVar(&f.wait, "catalog-wait", 500*time.Millisecond, "how long one catalogue read waits for workers")
	fl.Uint64Var(&f.heapFloor, "heap-floor", 32, "MiB the garbage collector may let the heap grow to before collecting, however small the live heap (0: Go's default; a GOGC environment variable wins)")
	fl.StringArrayVar(&f.tasks, "task", nil, "HTTP: serve the mesh tools GLOB as MCP tasks (io.modelcontextprotocol/tasks; durable calls) to clients that declare the extension; GLOB:required refuses other clients (-32021), GLOB:ask-first asks the tool's first question in the call's own round (repeatable)")
	fl.DurationVar(&f.grace, "shutdown-grace", 10*time.Second, "HTTP: how long requests in flight may take to finish on shutdown")
	return cmd
}

// runMCP serves the gateway on c over stdio or HTTP until ctx ends,
// following the fleet meanwhile.
func runMCP(ctx context.Context, c *caller.Caller, f mcpFlags, g *globals) error {
	cfg := f.gatewayConfig(g)
	cfg.Caller = c
	gw, err := gateway.New(cfg)
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInvalidConfig)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	if err := gw.Sync(ctx); err != nil {
		g.log.Warn("mcp: first catalogue read failed; serving an empty list until the next", "err", err)
	}
	go func() { defer close(watched); _ = gw.Run(ctx) }()
	defer func() { cancel(); <-watched }()
	if f.http == "" {
		return serveMCPStdio(ctx, gw, g)
	}
	return serveMCPHTTP(ctx, gw.HTTPHandler(f.httpOptions()), f, g)
}

// gatewayConfig is the gateway configuration the flags give (no caller).
func (f *mcpFlags) gatewayConfig(g *globals) gateway.Config {
	return gateway.Config{Allow: splitList(f.tools), Deny: splitList(f.deny),
		NamePrefix: f.namePrefix, Namespace: f.namespace, Settle: f.settle, CatalogWait: f.wait, Version: moduleVersion(), Logger: g.log,
		Progressive: f.progressive, Pinned: splitList(f.pinned), SearchLimit: f.searchLimit, Tasks: f.taskRule}
}

// httpOptions are the HTTP options the flags give.
func (f *mcpFlags) httpOptions() gateway.HTTPOptions {
	return gateway.HTTPOptions{Bearer: f.bearer, AllowedOrigins: f.origins, MaxBodyBytes: f.maxBody}
}

// serveMCPStdio serves one session on stdin/stdout; stdout carries only
// JSON-RPC, logs go to stderr.
func serveMCPStdio(ctx context.Context, gw *gateway.Gateway, g *globals) error {
	if err := gw.ServeStdio(ctx, g.stdin, g.stdout); err != nil && ctx.Err() == nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, "mcp stdio: "+err.Error())
	}
	return nil
}

// checkHTTP resolves --http (an empty host means 127.0.0.1: localhost by
// default) and --bearer-env before anything is dialled, and refuses to
// listen beyond loopback without a bearer.
func (f *mcpFlags) checkHTTP() error {
	host, port, err := net.SplitHostPort(f.http)
	if err != nil {
		return envelope.Problemf(envelope.CodeInvalidConfig, "--http %q: want host:port: %v", f.http, err)
	}
	if host == "" {
		host = "127.0.0.1"
		f.http = net.JoinHostPort(host, port)
	}
	if f.bearerEnv != "" {
		if f.bearer = os.Getenv(f.bearerEnv); f.bearer == "" {
			return envelope.Problemf(envelope.CodeInvalidConfig, "--bearer-env %s: the variable is empty or unset", f.bearerEnv)
		}
	}
	if err := f.checkAuth(); err != nil {
		return err
	}
	if !isLoopbackHost(host) && f.bearer == "" && f.authIssuer == "" {
		return envelope.Problemf(envelope.CodeInvalidConfig, "--http %s listens beyond this machine without a bearer", f.http).
			WithFix("Listen on 127.0.0.1, or require a bearer with --bearer-env VAR.", envelope.HasPlaceholders)
	}
	return nil
}

// serveMCPHTTP serves h on /mcp (and /) until ctx ends, then shuts down
// gracefully; with --auth-issuer only for valid bearers, beside the
// protected-resource metadata.
func serveMCPHTTP(ctx context.Context, h http.Handler, f mcpFlags, g *globals) error {
	ln, err := net.Listen("tcp", f.http)
	if err != nil {
		return envelope.Problemf(envelope.CodeInvalidConfig, "--http %s: %v", f.http, err)
	}
	mux := http.NewServeMux()
	if f.authIssuer != "" {
		res, err := f.resource(ctx)
		if err != nil {
			return err
		}
		h = res.Require(h)
		// RFC 9728 puts the document at the well-known path followed by
		// the resource's path; clients that know only the host try the root.
		mux.Handle(oauth.WellKnownPath, res.MetadataHandler())
		if p := res.MetadataPath(); p != oauth.WellKnownPath {
			mux.Handle(p, res.MetadataHandler())
		}
	}
	mux.Handle("/mcp", h)
	mux.Handle("/", h)
	fmt.Fprintf(g.stderr, "toolmesh mcp: serving MCP on http://%s/mcp\n", ln.Addr())
	if err := gateway.ServeHTTP(ctx, ln, mux, f.grace); err != nil {
		return envelope.NewProblem(envelope.CodeInternal, "mcp http: "+err.Error())
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// splitList splits a comma-separated flag value.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
