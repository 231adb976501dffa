package persons

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

// Config configures a Router.
type Config struct {
	// Dial connects to the mesh as a person: token returns the newest
	// token the person presented (read again at each reconnect, so a
	// connection outlives one token).
	Dial func(ctx context.Context, token func() string) (*nats.Conn, error)
	// Caller configures each person's caller.
	Caller caller.Config
	// Gateway configures each person's gateway (its Caller is set here).
	Gateway gateway.Config
	// HTTP configures each person's MCP endpoint.
	HTTP gateway.HTTPOptions
	// Max bounds the people connected at once (default 256): past it,
	// the one idle longest is disconnected (their sessions end; their
	// next request connects again).
	Max int
	// Logger receives the router's logs (default slog.Default()).
	Logger *slog.Logger
}

// Router is an http.Handler behind oauth.Resource.Require that hands each
// request to its person's gateway.
type Router struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	people map[string]*person
}

// New makes a router; ctx bounds every person's gateway. Close it when
// done.
func New(ctx context.Context, cfg Config) *Router {
	if cfg.Max <= 0 {
		cfg.Max = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Router{cfg: cfg, ctx: ctx, cancel: cancel, people: map[string]*person{}}
}

// ErrRefused is returned (wrapped) when the mesh refuses a person.
var ErrRefused = errors.New("the mesh refuses this person")

// ServeHTTP serves the request with its person's gateway: 403 when the
// mesh refuses the person (no policy rule admits them), 503 when the mesh
// cannot be reached.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id, token := oauth.IdentityFrom(req.Context())
	if id == nil {
		http.Error(w, "Unauthorized: no identity", http.StatusUnauthorized)
		return
	}
	p, err := r.get(req.Context(), id, token)
	if errors.Is(err, ErrRefused) {
		http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if err != nil {
		http.Error(w, "Service Unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	p.h.ServeHTTP(w, req)
}

// People is how many people are connected now.
func (r *Router) People() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.people)
}

// Close disconnects every person.
func (r *Router) Close() {
	r.cancel()
	r.mu.Lock()
	all := r.people
	r.people = map[string]*person{}
	r.mu.Unlock()
	for _, p := range all {
		<-p.ready
		p.close()
	}
}

// get is the person's connected gateway, connecting them first if need
// be (once, however many of their requests arrive together).
func (r *Router) get(ctx context.Context, id *oauth.Identity, token string) (*person, error) {
	key := id.Key()
	r.mu.Lock()
	p := r.people[key]
	if p != nil && p.started() && p.nc.IsClosed() {
		delete(r.people, key)
		go p.close()
		p = nil
	}
	created := p == nil
	if created {
		p = &person{ready: make(chan struct{}), done: make(chan struct{})}
		r.people[key] = p
		r.evictLocked(key)
	}
	p.used = time.Now()
	p.offer(token, id.Expiry)
	r.mu.Unlock()
	if created {
		r.start(p)
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p.err != nil {
		r.mu.Lock()
		if r.people[key] == p {
			delete(r.people, key)
		}
		r.mu.Unlock()
		return nil, p.err
	}
	return p, nil
}

// evictLocked disconnects the people idle longest while more than Max
// are connected, never keep. Call with r.mu held.
func (r *Router) evictLocked(keep string) {
	for len(r.people) > r.cfg.Max {
		var oldest string
		for k, p := range r.people {
			if k != keep && (oldest == "" || p.used.Before(r.people[oldest].used)) {
				oldest = k
			}
		}
		if oldest == "" {
			return
		}
		p := r.people[oldest]
		delete(r.people, oldest)
		go func() { <-p.ready; p.close() }()
	}
}

// start connects p and starts its gateway, then marks it ready.
func (r *Router) start(p *person) {
	defer close(p.ready)
	dctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	nc, err := r.cfg.Dial(dctx, p.token)
	if err != nil {
		close(p.done)
		p.err = classify(err)
		return
	}
	c, err := caller.New(nc, r.cfg.Caller)
	if err != nil {
		nc.Close()
		close(p.done)
		p.err = classify(err)
		return
	}
	gcfg := r.cfg.Gateway
	gcfg.Caller = c
	gw, err := gateway.New(gcfg)
	if err != nil {
		_ = c.Close()
		nc.Close()
		close(p.done)
		p.err = err
		return
	}
	pctx, pcancel := context.WithCancel(r.ctx)
	if err := gw.Sync(pctx); err != nil {
		r.cfg.Logger.Warn("mcp: a person's first catalogue read failed", "err", err)
	}
	go func() { defer close(p.done); _ = gw.Run(pctx) }()
	p.nc, p.c, p.cancel, p.h = nc, c, pcancel, gw.HTTPHandler(r.cfg.HTTP)
}

// classify marks an authorization failure as a refusal.
func classify(err error) error {
	if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		return ErrRefused
	}
	return err
}

// person is one connected person.
type person struct {
	ready chan struct{} // closed once started (err or the rest set)
	done  chan struct{} // closed once the gateway stopped following the fleet
	err   error
	nc    *nats.Conn
	c     *caller.Caller
	h     http.Handler

	cancel context.CancelFunc
	used   time.Time // guarded by Router.mu

	tmu    sync.Mutex
	tok    string
	tokExp time.Time
}

// started says whether start has finished successfully.
func (p *person) started() bool {
	select {
	case <-p.ready:
		return p.err == nil
	default:
		return false
	}
}

// offer keeps the token that stays valid longest.
func (p *person) offer(token string, exp time.Time) {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	if exp.After(p.tokExp) {
		p.tok, p.tokExp = token, exp
	}
}

// token is the person's token with the latest expiry.
func (p *person) token() string {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	return p.tok
}

// close stops p's gateway and disconnects it. Call after ready.
func (p *person) close() {
	if p.err != nil {
		return
	}
	p.cancel()
	<-p.done
	_ = p.c.Close()
	p.nc.Close()
}
