package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/ctxsleep"
	"github.com/toolmesh/toolmesh/internal/redact"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/worker"
)

// Config configures a Bridge. Entry is required.
type Config struct {
	Entry Entry
	// Worker is the template of the workers hosting the server's tools
	// (prefix, limits, logger); each gets a fresh ID.
	Worker worker.Config
	// Logger receives the bridge's logs (default slog.Default()).
	Logger *slog.Logger
	// RestartMin and RestartMax bound the backoff between restarts of a
	// server that exited (defaults 200ms and 30s); it doubles per failed
	// start and resets after a successful one.
	RestartMin, RestartMax time.Duration
	// KillGrace is how long a stdio server has to exit after its stdin
	// closes before it is terminated (default 5s).
	KillGrace time.Duration
	// AllowUnconfined runs a server whose sandbox this host cannot
	// enforce unconfined, with a warning, instead of refusing to start.
	AllowUnconfined bool
	// Sandbox is the host's sandbox support, when already probed.
	Sandbox *sandbox.Support
}

// Bridge is one MCP server hosted on the mesh.
type Bridge struct {
	nc     *nats.Conn
	cfg    Config
	log    *slog.Logger
	client *mcp.Client
	relist chan struct{}
	sinks  sync.Map // progress token → *sink
	cancel context.CancelFunc
	done   chan struct{}
	drains sync.WaitGroup // replaced workers still finishing their calls
	askers askers         // calls a server's elicitation may be put to (elicit.go)
	subs   subscriptions  // calls following a resource (subscribe.go)
	// offered is what the server offers to read (resources.go).
	offered offered
	// defs are the server's tool definitions as it sent them.
	defs toolDefs

	plan *sandbox.Plan // a sandboxed stdio server's; nil: unconfined
	// auth is the OAuth handler of the current connection (url bindings
	// with oauth), which knows why a request could not be authorized.
	auth atomic.Pointer[authWatch]
	// secrets are the binding's env and header values and its URL's
	// query values, redacted from every error and Problem the bridge
	// reports.
	secrets *redact.Redactor

	mu    sync.Mutex
	sess  *mcp.ClientSession // nil while the server is down
	ended chan struct{}      // closed when sess ends
	w     *worker.Worker
	tools []string // mesh names currently hosted
	// listed are the names of the server's last tools/list, hosted or not.
	listed  map[string]bool
	fp      string // fingerprint of the hosted tool set
	backoff time.Duration
}

// Start connects to (or starts) the server, registers its tools and keeps
// them in step until Drain. It fails when the first connection does: a
// misconfigured binding should stop the worker's start, not loop.
func Start(ctx context.Context, nc *nats.Conn, cfg Config) (*Bridge, error) {
	if cfg.RestartMin <= 0 {
		cfg.RestartMin = 200 * time.Millisecond
	}
	if cfg.RestartMax < cfg.RestartMin {
		cfg.RestartMax = max(30*time.Second, cfg.RestartMin)
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Bridge{nc: nc, cfg: cfg, log: cfg.Logger.With("mcp_namespace", cfg.Entry.Namespace),
		relist: make(chan struct{}, 1), done: make(chan struct{}), backoff: cfg.RestartMin,
		secrets: serverSecrets(cfg.Entry.Server)}
	b.client = mcp.NewClient(&mcp.Implementation{Name: "toolmesh-bridge", Version: "0.1.0"}, b.clientOptions())
	if err := b.prepareSandbox(ctx); err != nil {
		return nil, err
	}
	sess, err := b.connect(ctx)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "mcp namespace %s: cannot start or reach the server: %s", cfg.Entry.Namespace, b.redact(err))
	}
	if err := b.sync(ctx, sess, true); err != nil {
		_ = sess.Close()
		b.stopWorkers(ctx)
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "mcp namespace %s: %s", cfg.Entry.Namespace, b.redact(err))
	}
	b.setSession(sess)
	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.supervise(runCtx, sess)
	return b, nil
}

// clientOptions are the bridge's as the server's MCP client: it follows
// the tool list and resource updates, and declares the client
// capabilities the binding lists (ServerConfig.ClientCapabilities) and no
// other — roots, which the SDK declares by default, included.
func (b *Bridge) clientOptions() *mcp.ClientOptions {
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		// The bridge carries a server's input_required rounds itself
		// (rounds.go), as questions of the call they belong to.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case b.relist <- struct{}{}:
			default:
			}
		},
		ResourceUpdatedHandler: b.onResourceUpdated,
	}
	for _, c := range b.cfg.Entry.Server.ClientCapabilities {
		switch c {
		case capElicitation:
			opts.ElicitationHandler = b.onElicit
		case capSampling:
			opts.CreateMessageHandler = b.onSample
		}
	}
	return opts
}

// Namespace returns the entry's namespace.
func (b *Bridge) Namespace() string { return b.cfg.Entry.Namespace }

// Tools returns the mesh names of the tools currently hosted.
func (b *Bridge) Tools() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.tools...)
}

// Drain stops taking calls, lets those in flight finish (until ctx ends,
// then cancels them), and stops the server.
func (b *Bridge) Drain(ctx context.Context) error {
	b.cancel()
	<-b.done
	err := b.stopWorkers(ctx)
	if sess := b.setSession(nil); sess != nil {
		_ = sess.Close()
	}
	return err
}

// stopWorkers drains the current worker and waits for replaced ones.
func (b *Bridge) stopWorkers(ctx context.Context) error {
	b.mu.Lock()
	w := b.w
	b.w = nil
	b.mu.Unlock()
	var err error
	if w != nil {
		err = w.Drain(ctx)
	}
	b.drains.Wait()
	return err
}

// setSession swaps the live session and returns the previous one.
func (b *Bridge) setSession(s *mcp.ClientSession) *mcp.ClientSession {
	var ended chan struct{}
	if s != nil {
		ended = make(chan struct{})
		go func() { _ = s.Wait(); close(ended) }()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.sess
	b.sess, b.ended = s, ended
	return old
}

// sessionEnded returns a channel closed when sess has ended (at once when
// it is no longer the live session).
func (b *Bridge) sessionEnded(sess *mcp.ClientSession) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sess == sess && b.ended != nil {
		return b.ended
	}
	done := make(chan struct{})
	close(done)
	return done
}

func (b *Bridge) session() *mcp.ClientSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sess
}

// connect starts the stdio server or reaches the HTTP one.
func (b *Bridge) connect(ctx context.Context) (*mcp.ClientSession, error) {
	sc := b.cfg.Entry.Server
	var t mcp.Transport
	if sc.Command != "" {
		path, err := exec.LookPath(sc.Command)
		if err != nil {
			return nil, err
		}
		t = &processTransport{path: path, args: sc.Args, env: b.childEnv(), grace: b.cfg.KillGrace, onProgress: b.routeProgress, onLog: b.routeLog, defs: &b.defs}
		if b.plan != nil {
			argv := b.plan.Argv(sc.Args)
			t = &processTransport{path: argv[0], args: argv[1:], env: b.childEnv(), grace: b.cfg.KillGrace, confine: b.plan.SysProcAttr(),
				onProgress: b.routeProgress, onLog: b.routeLog, defs: &b.defs}
		}
	} else {
		st := &mcp.StreamableClientTransport{Endpoint: sc.URL,
			HTTPClient: &http.Client{Transport: headerTransport{headers: sc.Headers, next: http.DefaultTransport, tap: b.onStreamNotification, defs: &b.defs}}}
		if sc.OAuth != nil {
			h, err := oauthHandler(b.cfg.Entry, nil, "")
			if err != nil {
				return nil, err
			}
			w := &authWatch{OAuthHandler: h}
			b.auth.Store(w)
			st.OAuthHandler = w
		}
		t = st
	}
	sess, err := b.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: b.protocol()})
	if err != nil {
		return nil, err
	}
	b.askForLogs(ctx, sess)
	return sess, nil
}

// askForLogs sets a server that logs to send every message (level
// debug): the bridge relays each to the call it belongs to, and whoever
// shows them filters (the MCP gateway by each client's logging/setLevel).
// Servers that follow the go-sdk send none until a level is set.
func (b *Bridge) askForLogs(ctx context.Context, sess *mcp.ClientSession) {
	ir := sess.InitializeResult()
	if ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	if err := sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		b.log.Warn("mcp bridge: the server refused logging/setLevel; its log messages may not reach callers", "err", b.redact(err))
	}
}

// The revisions the bridge speaks with its server (ServerConfig.Protocol).
// The default is the session model of 2025-11-25: the bridge holds one
// long session and relays what a server sends it mid-call, elicitation
// among it. At 2026-07-28 a server may not send requests while serving
// one; it answers input_required instead (SEP-2322), and the bridge
// carries each round as a question of the call (rounds.go).
const (
	protocolSession   = "2025-11-25"
	protocolStateless = "2026-07-28"
)

// protocol is the revision the binding names, or the default.
func (b *Bridge) protocol() string {
	if p := b.cfg.Entry.Server.Protocol; p != "" {
		return p
	}
	return protocolSession
}

// serverSecrets is the Redactor of a server binding's env and header
// values and of its URL's query values (redact.Values: those long enough
// to be secrets).
func serverSecrets(sc ServerConfig) *redact.Redactor {
	secrets := append(redact.Values(sc.Env), redact.Values(sc.Headers)...)
	if sc.OAuth != nil && len(sc.OAuth.secret()) >= redact.MinValue {
		secrets = append(secrets, sc.OAuth.secret())
	}
	if u, err := url.Parse(sc.URL); err == nil && sc.URL != "" {
		for _, vs := range u.Query() {
			for _, v := range vs {
				if len(v) >= redact.MinValue {
					secrets = append(secrets, v)
				}
			}
		}
	}
	return redact.New(secrets...)
}

// redact removes the binding's URL (which may carry a token in its
// query), its secrets (whole and in pieces) and any URL's credentials
// from an error before it is reported.
func (b *Bridge) redact(err error) string {
	msg := err.Error()
	if u := b.cfg.Entry.Server.URL; u != "" {
		msg = strings.ReplaceAll(msg, u, "<binding url>")
	}
	return b.secrets.String(msg)
}

// childEnv is the inherited variables plus the binding's env, verbatim.
func (b *Bridge) childEnv() []string {
	var env []string
	for _, k := range b.cfg.Entry.InheritEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range b.cfg.Entry.Server.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// supervise follows list_changed and restarts the server when its session
// ends, until ctx ends.
func (b *Bridge) supervise(ctx context.Context, sess *mcp.ClientSession) {
	defer close(b.done)
	for {
		b.follow(ctx, sess)
		if ctx.Err() != nil {
			return
		}
		b.setSession(nil)
		sess = b.restart(ctx)
		if sess == nil {
			return
		}
	}
}

// follow re-lists the tools on every list_changed until the session ends
// or ctx does.
func (b *Bridge) follow(ctx context.Context, sess *mcp.ClientSession) {
	ended := make(chan struct{})
	go func() { _ = sess.Wait(); close(ended) }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ended:
			return
		case <-b.relist:
			if err := b.sync(ctx, sess, false); err != nil && ctx.Err() == nil {
				b.log.Warn("mcp bridge: re-listing tools failed", "err", b.redact(err))
			}
		}
	}
}

// restart reconnects with exponential backoff; nil when ctx ends first.
func (b *Bridge) restart(ctx context.Context) *mcp.ClientSession {
	for {
		b.mu.Lock()
		wait := b.backoff
		b.backoff = min(b.backoff*2, b.cfg.RestartMax)
		b.mu.Unlock()
		b.log.Warn("mcp bridge: the server's session ended; restarting", "in", wait)
		if ctxsleep.Sleep(ctx, wait) != nil {
			return nil
		}
		sess, err := b.connect(ctx)
		if err != nil {
			b.log.Warn("mcp bridge: restart failed", "err", b.redact(err))
			continue
		}
		if err := b.sync(ctx, sess, false); err != nil {
			b.log.Warn("mcp bridge: listing tools after restart failed", "err", b.redact(err))
			_ = sess.Close()
			continue
		}
		b.mu.Lock()
		b.backoff = b.cfg.RestartMin
		b.mu.Unlock()
		b.setSession(sess)
		b.log.Info("mcp bridge: server restarted")
		return sess
	}
}

// downProblem is what a call gets while the server is down or when it
// exits under the call.
func (b *Bridge) downProblem(what string) *envelope.Problem {
	b.mu.Lock()
	wait := b.backoff
	b.mu.Unlock()
	return envelope.NewProblem(envelope.CodeWorkerLost,
		fmt.Sprintf("MCP server %q %s; the worker is restarting it", b.cfg.Entry.Namespace, what)).
		WithRetryAfter(max(wait.Seconds(), 1))
}

// errClosed reports whether err says the MCP connection is gone: the SDK
// reports a server that exits mid-call as io.EOF on its stdout.
func errClosed(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
