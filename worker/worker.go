package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/telemetry"
	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/workercall"
)

// NoQueue as Config.Limits.MaxQueued admits no call beyond the running ones.
// Zero never means "none" in a Config: it means the documented default.
const NoQueue = -1

// Config configures a Worker. The zero value is usable.
type Config struct {
	// ID identifies this worker instance (default: a new ULID, after
	// "<Pool>." when Pool is set).
	ID string
	// Pool names the worker pool (the NATS identity) this worker belongs
	// to. It becomes the first token of the worker's id, and so of its
	// control subject (<prefix>.ctl.<pool>.<ulid>), letting NATS
	// permissions give each pool its own control subjects. Workers of one
	// pool share an identity and trust each other; workers of different
	// pools cannot read each other's control messages. Empty: no pool.
	Pool string
	// Name is the ADR-32 service name (default "toolmesh").
	Name string
	// Version is the worker's semantic version, reported to discovery (default 0.1.0).
	Version string
	// Description and Metadata are reported to discovery as they are.
	Description string
	Metadata    map[string]string
	// Prefix is the mesh's subject prefix (default "toolmesh").
	Prefix string
	// Limits bound what the worker admits and holds: calls, their sizes,
	// each sender's share, and unread messages.
	Limits Limits
	// Liveness sets the heartbeats and the time bounds of calls,
	// registrations and questions.
	Liveness Liveness
	// Approvals requires the caller's approval before matching tools run
	// (docs/protocol.md §23.7).
	Approvals Approvals
	// Middleware wraps every tool's handler, the first outermost, outside
	// the tool's own middleware (see Register). Package worker/workermw
	// has auth, limits, access logs and metrics.
	Middleware []Middleware
	// OnAnswer, when set, hears of every answer that settles a question
	// of a call here (the handler's, or the approval of Approvals), which
	// middleware cannot see: set it to workermw.AuditAnswers to record
	// them in the audit trail. It runs on the worker's control goroutine:
	// it must not block.
	OnAnswer func(ctx context.Context, a workercall.Answered)
	// OnRefused, when set, hears of every call that ended before its
	// handler's middleware saw it — refused overloaded, for a spec
	// conflict, too late for its pickup, with bad metadata or args, or
	// ended while it waited for a slot or an approval — with the Problem
	// its caller got (ran "no"). req has the tool, call id, identity and
	// args (nil when the body could not be read); its methods that reach
	// the call (Ask) do nothing. With Middleware and OnAnswer it lets
	// workermw.AuditRefused record every call's end. It runs on the
	// subscription's or the call's goroutine: it must not block.
	OnRefused func(ctx context.Context, req *Request, p *envelope.Problem)
	// ProblemBaseURI is the base of problem type URIs (default https://toolmesh.dev/problems).
	ProblemBaseURI string
	// Logger receives the worker's logs (default slog.Default()).
	Logger *slog.Logger
	// Tracing sets where spans go and how trace context is read.
	Tracing Tracing
}

// Limits bound what a worker admits and holds; each zero value means
// the default named on its field.
type Limits struct {
	// MaxConcurrent bounds handlers running at once (default 1024).
	MaxConcurrent int
	// MaxQueued bounds admitted calls waiting for a slot (0: the default,
	// 4×MaxConcurrent; NoQueue: none, a call finding every slot taken is
	// refused). Calls beyond MaxConcurrent+MaxQueued are answered
	// overloaded at once. A call without caller liveness waits only where
	// the worker can see its sender leave (docs/protocol.md §8.5).
	MaxQueued int
	// OverloadRetryAfter is the retry_after of overloaded answers (default 1s).
	OverloadRetryAfter time.Duration
	// MaxArgsBytes bounds a call body (default: the connection's max payload).
	MaxArgsBytes int
	// MaxPendingCalls and MaxPendingBytes bound the calls waiting unread in
	// one tool's subscription (defaults 65536 and 64 MiB). Admission is
	// cheap, so they are reached only by a flood faster than a core can
	// answer overloaded; NATS then drops calls (their callers see
	// worker_lost) rather than letting the worker's memory grow unbounded.
	MaxPendingCalls int
	MaxPendingBytes int
	// MaxPerIdentity bounds the calls one identity may hold admitted here
	// (running and queued) — a tenant account and user under deploy/secure,
	// a caller id in a single account, and each sender's unleased calls
	// together (default half of MaxConcurrent, at least 1: one sender can
	// never hold every execution slot, so another's calls always find
	// one). Past it the sender's calls are refused overloaded, unrun,
	// while others' are still admitted.
	MaxPerIdentity int
	// MaxResultBytes caps one event's encoded size (default
	// 64 MiB). An event larger than the server's
	// max_payload goes out in chunks over the call's event stream; past
	// this cap a result becomes payload_too_large.
	MaxResultBytes int
}

// Liveness sets a worker's heartbeats and the time bounds of its calls,
// registrations and questions; each zero value means the default named
// on its field.
type Liveness struct {
	// Heartbeat is the interval used when a caller names none (default 1s).
	Heartbeat time.Duration
	// MaxUnleasedLife bounds calls whose caller does not prove it is alive
	// (no caller= in the call's metadata line, as from a plain `nats req`): such
	// a call ends with timeout after its budget or this, whichever is
	// shorter, so a call for a dead inbox cannot run forever (default 5m).
	MaxUnleasedLife time.Duration
	// QuestionTimeout bounds how long a question waits for its answer
	// when the handler gives no timeout (default 5m).
	QuestionTimeout time.Duration
}

// Tracing sets a worker's OpenTelemetry tracing; the zero value traces
// through the global provider (and costs nothing while none is installed).
type Tracing struct {
	// TracerProvider makes server spans (default: the global provider; while
	// none is installed, calls make no spans at all and cost nothing for it).
	TracerProvider trace.TracerProvider
	// Propagator reads trace context from call headers (default W3C trace context plus baggage).
	Propagator propagation.TextMapPropagator
}

// Worker hosts tools on one NATS connection.
type Worker struct {
	nc       *nats.Conn
	cfg      Config
	subjects wire.Subjects
	problems problembase.Registry
	tracer   *telemetry.Tracer
	prop     propagation.TextMapPropagator
	log      *slog.Logger
	started  time.Time
	slots    chan struct{}
	idle     chan work // hands calls and batches to runner goroutines waiting for work
	admitted atomic.Int64
	inflight sync.WaitGroup
	// admitMu orders admissions (inflight.Add, read-locked) before the
	// moment Stop or Drain closes admission and waits on inflight.
	admitMu  sync.RWMutex
	stopping bool
	// stopCtx ends when the worker stops; see stop.
	stopCtx    context.Context
	stopCancel context.CancelCauseFunc

	mu           sync.Mutex
	tools        map[string]*tool
	toolsVersion int64           // counts changes of tools
	registering  map[string]bool // names whose subscription awaits confirmation
	ctlSubs      []*nats.Subscription
	draining     bool
	closed       chan nats.Status // CLOSED notifications; removed when the worker stops

	// payload is the connection's max_payload, read once per connection
	// rather than under the connection's lock for every event.
	payload atomic.Int64

	meta metaParser // validates call metadata against this worker's bounds

	callsMu sync.Mutex
	calls   map[callKey]*call
	peers   map[callKey]*peer     // (identity, caller id) → its calls and lease
	probing map[callKey]chan bool // callers whose liveness probe is out → its answer (true: alive)

	presence  *presence
	shares    shares       // calls admitted per sender (Config.Limits.MaxPerIdentity)
	announcer *announcer   // names calls to their callers before they start
	senders   senderProbes // checks that unleased calls that waited still have a sender

	// The encoded catalogue (see catalogue), for toolsVersion catVersion.
	catMu      sync.Mutex
	catVersion int64
	catTools   []byte
	catDigest  string

	formatsMu sync.Mutex
	formats   map[string]*envelope.Schema
	// confirmTimeout bounds how long Register, an announcement and an
	// unleased call's check wait for the server to confirm what they
	// published (defaultConfirmTimeout; the package's tests lengthen it).
	confirmTimeout time.Duration
}

// defaultConfirmTimeout is how long the worker waits for the server to
// confirm a subscription or a publish before giving up on it.
const defaultConfirmTimeout = 10 * time.Second

type tool struct {
	spec    envelope.ToolSpec
	handler Handler
	admit   admitter // the handler's own admission before start, if it has one
	// familyAt, for a handler serving a family of names
	// (workercall.Family), is where in a call's subject the name called
	// starts; 0 for every other tool.
	familyAt int
	input    *envelope.Schema
	output   *envelope.Schema
	sub      *nats.Subscription
	dsub     *nats.Subscription // the describe subject
	// spanName and spanOpts start each call's server span, built once.
	spanName string
	spanOpts []trace.SpanStartOption
	approve  bool // calls wait for the caller's approval (Config.Approvals)
	// inline: the handler is declared Inline, and neither an approval nor
	// an admission of its own makes its calls wait: they may run on the
	// subscription's goroutine (see call.runsInline).
	inline bool
	// retrySafe: the spec declares the tool idempotent or read-only, so a
	// call whose caller accepts ran "maybe" may start unconfirmed (§8.2).
	retrySafe bool
	// digest names the spec as callers see it (wire.SpecDigest): a call
	// validated against a spec of another digest is refused unrun.
	digest string

	load loadStats // in flight, errors by code, latency (stats.go)
	// typical is a moving average of its handler's run time (ns): a tool
	// whose calls take longer than handoffAfter is not run inline in
	// batches (see batch.runInline).
	typical   atomic.Int64
	statsMu   sync.Mutex
	requests  int
	errors    int
	lastError string
	busy      time.Duration
}

// largeArgsFix says what to do about args too large to send.
const largeArgsFix = "Pass large inputs by reference — a path, URL or object-store key the tool can read — rather than inline in args, or raise the NATS server's max_payload."

// errDraining is returned by Register once Drain or Stop has begun.
var errDraining = errors.New("worker is draining")

// errCallerLost is the cancel cause when the caller stops proving it is alive.
var errCallerLost = errors.New("caller stopped sending liveness messages")

// errCallerCancelled is the cancel cause of a cancel control message.
var errCallerCancelled = errors.New("cancelled by the caller")

// withDefaults fills every unset field of cfg with its documented default.
func (cfg Config) withDefaults(nc *nats.Conn) Config {
	if cfg.ID == "" {
		cfg.ID = ulid.Make().String()
		if cfg.Pool != "" {
			cfg.ID = cfg.Pool + "." + cfg.ID
		}
	}
	if cfg.Name == "" {
		cfg.Name = wire.ServiceName
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	cfg = cfg.withLimitDefaults(nc)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tracing.Propagator == nil {
		cfg.Tracing.Propagator = telemetry.DefaultPropagator()
	}
	return cfg
}

// withLimitDefaults fills the unset bounds of cfg: admission, timing,
// sizes and the pending limits of its subscriptions.
func (cfg Config) withLimitDefaults(nc *nats.Conn) Config {
	if cfg.Limits.MaxConcurrent <= 0 {
		cfg.Limits.MaxConcurrent = 1024
	}
	if cfg.Limits.MaxQueued < 0 {
		cfg.Limits.MaxQueued = 0
	} else if cfg.Limits.MaxQueued == 0 {
		cfg.Limits.MaxQueued = 4 * cfg.Limits.MaxConcurrent
	}
	if cfg.Limits.OverloadRetryAfter <= 0 {
		cfg.Limits.OverloadRetryAfter = time.Second
	}
	if cfg.Liveness.Heartbeat <= 0 {
		cfg.Liveness.Heartbeat = wire.DefaultHeartbeat
	}
	cfg.Liveness.Heartbeat = min(max(cfg.Liveness.Heartbeat, wire.MinHeartbeat), wire.MaxHeartbeat)
	if cfg.Liveness.MaxUnleasedLife <= 0 {
		cfg.Liveness.MaxUnleasedLife = 5 * time.Minute
	}
	if cfg.Liveness.QuestionTimeout <= 0 {
		cfg.Liveness.QuestionTimeout = defaultQuestionTimeout
	}
	if cfg.Limits.MaxResultBytes <= 0 {
		cfg.Limits.MaxResultBytes = wire.DefaultMaxResultBytes
	}
	if cfg.Limits.MaxPendingCalls <= 0 {
		cfg.Limits.MaxPendingCalls = 1 << 16
	}
	if cfg.Limits.MaxPendingBytes <= 0 {
		cfg.Limits.MaxPendingBytes = 64 << 20
	}
	if cfg.Limits.MaxPerIdentity <= 0 {
		cfg.Limits.MaxPerIdentity = max(cfg.Limits.MaxConcurrent/2, 1)
	}
	if cfg.Limits.MaxArgsBytes <= 0 {
		cfg.Limits.MaxArgsBytes = int(nc.MaxPayload())
	}
	return cfg
}

// New creates a worker on nc and starts serving its control and discovery
// subjects. Register tools to start taking calls.
func New(nc *nats.Conn, cfg Config) (*Worker, error) {
	cfg, err := cfg.checked(nc)
	if err != nil {
		return nil, err
	}
	w := newWorker(nc, cfg)
	go w.announcer.run()
	wire.OnViolation(nc, func(op wire.Operation, subject string) bool {
		w.onViolation(op, subject)
		return false // every refusal of a worker's is an error of its owner's
	})
	err = w.subscribeControl()
	if err == nil {
		err = w.confirmSubscriptions(w.subjectsOf(w.ctlSubs)...)
	}
	if err != nil {
		w.stopCancel(err) // also silences the chained error handler
		w.unsubscribeAll()
		return nil, err
	}
	w.startPresence()
	w.stopWhenClosed()
	return w, nil
}

// checked refuses a configuration a worker cannot run with and fills in
// the defaults.
func (cfg Config) checked(nc *nats.Conn) (Config, error) {
	if cfg.Pool != "" {
		var pool string
		if err := token(&pool, []byte(cfg.Pool)); err != nil || len(cfg.Pool) > 64 {
			return cfg, envelope.Problemf(envelope.CodeInvalidConfig, "worker pool %q: want 1-64 characters of A-Z a-z 0-9 _ -", cfg.Pool)
		}
	}
	if err := cfg.Approvals.check(); err != nil {
		return cfg, envelope.NewProblem(envelope.CodeInvalidConfig, err.Error())
	}
	cfg = cfg.withDefaults(nc)
	if !wire.ValidWorkerID(cfg.ID) {
		// Callers ignore a worker id they could not put in a subject, so
		// such a worker could never be cancelled, credited or kept alive.
		return cfg, envelope.Problemf(envelope.CodeInvalidConfig,
			"worker id %q: want dot-separated tokens of A-Z a-z 0-9 _ -, at most 256 characters", cfg.ID)
	}
	return cfg, nil
}

// newWorker makes the worker's state from a checked configuration; it
// subscribes nothing yet.
func newWorker(nc *nats.Conn, cfg Config) *Worker {
	w := &Worker{
		confirmTimeout: defaultConfirmTimeout,
		nc:             nc,
		cfg:            cfg,
		subjects:       wire.Subjects{Prefix: cfg.Prefix},
		problems:       problembase.Registry{BaseURI: cfg.ProblemBaseURI},
		tracer:         telemetry.NewTracer(cfg.Tracing.TracerProvider, "github.com/toolmesh/toolmesh/worker"),
		prop:           cfg.Tracing.Propagator,
		log:            cfg.Logger.With("worker_id", cfg.ID),
		started:        time.Now().UTC(),
		slots:          make(chan struct{}, cfg.Limits.MaxConcurrent),
		idle:           make(chan work),
		tools:          map[string]*tool{},
		registering:    map[string]bool{},
		calls:          map[callKey]*call{},
		peers:          map[callKey]*peer{},
		probing:        map[callKey]chan bool{},
		formats:        map[string]*envelope.Schema{},
	}
	w.shares = shares{limit: cfg.Limits.MaxPerIdentity, held: map[shareKey]int{}}
	w.meta = metaParser{problems: w.problems, defInterval: cfg.Liveness.Heartbeat, minInterval: wire.MinHeartbeat}
	w.payload.Store(nc.MaxPayload())
	w.stopCtx, w.stopCancel = context.WithCancelCause(context.Background())
	w.announcer = newAnnouncer(w)
	return w
}

// stopWhenClosed cancels the handlers once the connection is closed for
// good: such a connection can deliver no result, so they would run for
// nobody.
func (w *Worker) stopWhenClosed() {
	closed := w.nc.StatusChanged(nats.CLOSED)
	w.closed = closed
	go func() {
		if _, ok := <-closed; ok {
			w.stop(errors.New("the NATS connection was closed"))
			w.presence.goodbye()
		}
	}()
}

// ID returns the worker's instance id.
func (w *Worker) ID() string { return w.cfg.ID }

// Register validates spec (name, schemas), compiles its schemas once, and
// starts taking calls for it on one queue subscription. When it returns,
// the server has the subscription: calls through the same server reach it.
// Waiting for the server's confirmation (at most 10s)
// holds no lock, and a registration the server does not confirm is undone
// entirely: the tool is then not registered at all. h runs inside
// Config.Middleware and then mw, the first outermost.
func (w *Worker) Register(spec envelope.ToolSpec, h Handler, mw ...Middleware) error {
	if h == nil {
		return errors.New("register: nil handler")
	}
	declared, inline := h.(inlineHandler)
	if inline {
		h = declared.Handler
	}
	admit, _ := h.(admitter)
	_, family := h.(workercall.Family)
	h = chain(chain(h, mw...), w.cfg.Middleware...)
	in, out, err := spec.Compile()
	if err != nil {
		return w.problems.New(envelope.CodeInvalidConfig, err.Error())
	}
	t := &tool{spec: spec, handler: h, admit: admit, input: in, output: out,
		spanName: "toolmesh.serve " + spec.Name, approve: w.cfg.Approvals.requires(spec),
		retrySafe: spec.Annotations.IsIdempotent() || spec.Annotations.IsReadOnly(),
		digest:    wire.SpecDigest(spec),
		spanOpts:  []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}}
	t.inline = inline && !t.approve && admit == nil
	if family {
		t.familyAt = len(w.subjects.Call(""))
	}
	if err := w.reserve(t); err != nil {
		return err
	}
	// Round-trip to the server so the tool is callable when Register
	// returns, and so a subscription the server's permissions refuse fails
	// Register (naming it) instead of leaving a worker that serves nothing.
	err = w.confirmSubscriptions(t.sub.Subject, t.dsub.Subject)
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.registering, spec.Name)
	if err == nil && w.draining {
		err = errDraining
	}
	if err != nil {
		_ = t.sub.Unsubscribe()
		_ = t.dsub.Unsubscribe()
		if errors.Is(err, errDraining) {
			return err
		}
		return fmt.Errorf("register %q: %w", spec.Name, err)
	}
	w.tools[spec.Name] = t
	w.toolsVersion++
	w.ctlSubs = append(w.ctlSubs, t.dsub)
	go w.presence.changed()
	return nil
}

// Unregister stops taking calls for the tool named name: its call and
// describe subscriptions end, discovery and catalogues stop listing it,
// and calls already taken run to their end. It reports whether the tool
// was registered. cli.RegisterFile uses it to undo a partly registered
// tools file.
func (w *Worker) Unregister(name string) bool {
	w.mu.Lock()
	t, ok := w.tools[name]
	if ok {
		delete(w.tools, name)
		w.ctlSubs = slices.DeleteFunc(w.ctlSubs, func(s *nats.Subscription) bool { return s == t.dsub })
	}
	w.mu.Unlock()
	if !ok {
		return false
	}
	_ = t.sub.Unsubscribe()
	_ = t.dsub.Unsubscribe()
	go w.presence.changed()
	return true
}

// reserve claims t's name and subscribes its call and describe subjects.
func (w *Worker) reserve(t *tool) error {
	name := t.spec.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.draining {
		return errDraining
	}
	if _, dup := w.tools[name]; dup || w.registering[name] {
		return fmt.Errorf("register: tool %q is already registered", name)
	}
	// Describe first, the call subject last: when the server refuses both,
	// the refusal nats.go keeps (the last one) names the call subject.
	dsub, err := w.nc.QueueSubscribe(w.subjects.Describe(name), w.subjects.QueueGroup(), func(m *nats.Msg) {
		b, _ := json.Marshal(t.spec)
		_ = m.Respond(b)
	})
	if err != nil {
		return fmt.Errorf("register %q: %w", name, err)
	}
	// A handler subscription: nats.go queues its unread calls in a list
	// that grows with what is pending, where a synchronous one would
	// allocate a 65,536-slot channel (512 KiB the GC scans) per tool
	// whatever the load: 1,000 idle tools would cost half a gigabyte.
	subject := w.subjects.Call(name)
	if t.familyAt > 0 {
		subject += ".>" // every name of the family, not the bare one
	}
	sub, err := w.nc.QueueSubscribe(subject, w.subjects.QueueGroup(), func(m *nats.Msg) { w.onCall(t, m) })
	if err != nil {
		_ = dsub.Unsubscribe()
		return fmt.Errorf("register %q: %w", name, err)
	}
	// The limits bound the calls waiting unread when a flood outruns the
	// readers; NATS then drops calls (their callers see worker_lost).
	_ = sub.SetPendingLimits(w.cfg.Limits.MaxPendingCalls, w.cfg.Limits.MaxPendingBytes)
	t.sub, t.dsub = sub, dsub
	w.registering[name] = true
	return nil
}

// Specs returns the registered tools' specs, sorted by name.
func (w *Worker) Specs() []envelope.ToolSpec {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]envelope.ToolSpec, 0, len(w.tools))
	for _, t := range w.tools {
		out = append(out, t.spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Drain stops taking calls (every message already delivered to this worker
// is still served), waits for the calls in flight to finish, then closes
// the worker's subscriptions. If ctx ends first, the remaining handlers are
// cancelled and ctx's error is returned. The connection stays open.
func (w *Worker) Drain(ctx context.Context) error {
	w.mu.Lock()
	if w.draining {
		w.mu.Unlock()
		return nil
	}
	w.draining = true
	go w.presence.goodbye()
	var closed []<-chan nats.SubStatus
	for _, t := range w.tools {
		closed = append(closed, t.sub.StatusChanged(nats.SubscriptionClosed))
		if err := t.sub.Drain(); err != nil {
			w.log.Warn("drain subscription", "tool", t.spec.Name, "err", err)
		}
	}
	w.mu.Unlock()
	var err error
	for _, ch := range closed {
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	w.closeAdmission()
	done := make(chan struct{})
	go func() { w.inflight.Wait(); close(done) }()
	if err == nil {
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		w.stop(fmt.Errorf("worker drain: %w", err))
		<-done
	}
	w.unsubscribeAll()
	return err
}

// Stop cancels every call in flight (their callers get cancelled errors)
// and closes the worker's subscriptions at once.
func (w *Worker) Stop() {
	w.mu.Lock()
	w.draining = true
	w.mu.Unlock()
	w.closeAdmission()
	w.presence.goodbye()
	w.stop(errors.New("worker stopped"))
	w.unsubscribeAll()
	w.inflight.Wait()
}

// closeAdmission makes every later call be refused before it is counted
// in inflight, so a Wait on inflight that starts now sees every call that
// will ever run: no handler starts after Stop or Drain returns.
func (w *Worker) closeAdmission() {
	w.admitMu.Lock()
	w.stopping = true
	w.admitMu.Unlock()
}

func (w *Worker) unsubscribeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed != nil {
		w.nc.RemoveStatusListener(w.closed)
		w.closed = nil
	}
	for _, t := range w.tools {
		if t.sub.IsValid() {
			_ = t.sub.Unsubscribe()
		}
	}
	for _, s := range w.ctlSubs {
		if s.IsValid() {
			_ = s.Unsubscribe()
		}
	}
	w.ctlSubs = nil
}

func (w *Worker) subscribeControl() error {
	ctl, err := w.nc.Subscribe(w.subjects.Control(w.cfg.ID), w.onControl)
	if err != nil {
		return err
	}
	// Anyone allowed on the subject can send here, so what waits unread is
	// bounded: past the limits NATS drops control messages (a cancel or
	// alive lost to a flood is resent at the sender's next tick) instead of
	// the worker's memory growing with a neighbour's flood.
	_ = ctl.SetPendingLimits(maxControlPending, maxControlPendingBytes)
	w.ctlSubs = append(w.ctlSubs, ctl)
	// Confirmed on its own: when the pool is wrong, the control subject is
	// the one to name (discovery subjects would be refused too).
	if err := w.confirmSubscriptions(ctl.Subject); err != nil {
		return err
	}
	probes, err := w.nc.Subscribe(w.subjects.Control(w.cfg.ID)+".*", w.onProbeReply)
	if err != nil {
		return err
	}
	_ = probes.SetPendingLimits(maxControlPending, maxControlPendingBytes)
	w.ctlSubs = append(w.ctlSubs, probes)
	answer := func(m *nats.Msg) { _ = m.Respond(w.catalogueEntry()) }
	for _, subj := range []string{w.subjects.Catalog(), w.subjects.WorkerCatalog(w.cfg.ID)} {
		cat, err := w.nc.Subscribe(subj, answer)
		if err != nil {
			return err
		}
		w.ctlSubs = append(w.ctlSubs, cat)
	}
	return w.subscribeDiscovery()
}

func (w *Worker) onControl(m *nats.Msg) {
	if len(m.Data) > maxControlBytes {
		return // no control message is this large: not worth decoding
	}
	var c wire.Control
	if err := json.Unmarshal(m.Data, &c); err != nil {
		w.log.Debug("malformed control message", "err", err) // debug: anyone can send these
		return
	}
	// A control message acts only on calls made by the same identity: the
	// server-stamped identity is part of every key, so naming another
	// tenant's call id (or caller id) finds nothing.
	who := wire.Identity(m.Header)
	switch c.Op {
	case wire.OpAlive:
		w.heard(callKey{who, c.CallerID})
	case wire.OpBeat:
		w.heard(callKey{who, c.CallerID})
		w.beatNow(callKey{who, c.CallerID})
	case wire.OpCancel:
		// Idempotent and race-tolerant: an unknown call id is ignored.
		if cl := w.lookup(callKey{who, c.CallID}); cl != nil {
			cl.cancel(errCallerCancelled)
		}
	case wire.OpAnswer:
		// Only the call's own identity finds the call (§23.3).
		if cl := w.lookup(callKey{who, c.CallID}); cl != nil {
			cl.answer(c)
		}
	case wire.OpCredit:
		if cl := w.lookup(callKey{who, c.CallID}); cl != nil && c.N > 0 {
			cl.grant(c.N)
		}
	}
}

func (w *Worker) lookup(k callKey) *call {
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	return w.calls[k]
}

// responseFormatSchema compiles a json_schema response format once per
// distinct schema (a small bounded cache).
func (w *Worker) responseFormatSchema(raw json.RawMessage) (*envelope.Schema, error) {
	key := string(raw)
	w.formatsMu.Lock()
	s, ok := w.formats[key]
	w.formatsMu.Unlock()
	if ok {
		return s, nil
	}
	s, err := envelope.CompileFormatSchema(raw)
	if err != nil {
		return nil, err
	}
	w.formatsMu.Lock()
	if len(w.formats) >= 256 {
		clear(w.formats)
	}
	w.formats[key] = s
	w.formatsMu.Unlock()
	return s, nil
}

// onCall admits a call on the subscription's goroutine, answering cheap
// refusals (malformed metadata, overload) at once, and hands an admitted
// call to a runner, so a handler that blocks never holds up the next call;
// only a handler declared Inline runs here, when nothing before it waits.
func (w *Worker) onCall(t *tool, m *nats.Msg) {
	received := time.Now()
	if m.Reply == "" {
		if m.Header.Get(wire.HeaderProbe) == "" { // a catalogue's permission probe is expected (§14.5)
			w.log.Warn("call without a reply subject dropped", "tool", t.spec.Name)
		}
		return
	}
	if wire.IsBatch(m.Data) {
		w.onBatch(t, m, received)
		return
	}
	c := w.newCall(t, callMsg{reply: m.Reply, data: m.Data, header: m.Header, called: t.called(m.Subject)}, received)
	if c == nil || !w.admit(c) {
		return
	}
	switch {
	case c.runsInline():
		w.runOnReader(c)
	case c.runsAfterNaming():
		if !w.announcer.settleOnReader(m.Sub, work{c: c}, c) {
			w.announcer.announceThen(work{c: c}, c)
		}
	default:
		c.announceEarly()
		w.dispatch(c)
	}
}

// dispatch runs an admitted call on a runner goroutine, an idle one when
// there is one: the subscription's goroutine only admits.
func (w *Worker) dispatch(c *call) {
	c.tool.load.begin()
	w.runOn(work{c: c})
}

// work is what a runner goroutine runs: one call, a batch's calls one
// after another (batch.runInline), or the work of handlers declared
// Inline that waited for one announcer round (runSettled).
type work struct {
	c       *call
	batch   *batch
	calls   []*call
	settled []work
}

func (j work) run() {
	if j.settled != nil {
		runSettled(j.settled)
		return
	}
	if j.batch != nil {
		j.batch.runInline(j.calls, false)
		return
	}
	j.c.run()
}

// runOn runs j on an idle runner goroutine, reusing its already grown
// stack, or on a new one when none is idle: a fresh goroutine grows its
// stack again to the depth of a call.
func (w *Worker) runOn(j work) {
	select {
	case w.idle <- j:
	default:
		go w.runner(j)
	}
}

// admit counts c in flight, or answers it overloaded when the worker is
// full or stopping; it reports whether c was admitted.
func (w *Worker) admit(c *call) bool {
	w.admitMu.RLock()
	defer w.admitMu.RUnlock()
	var detail string
	switch {
	case w.stopping:
		detail = fmt.Sprintf("worker %s is stopping; the handler did not run", w.cfg.ID)
	case !w.shares.take(c):
		detail = fmt.Sprintf("worker %s already holds this sender's share of %d calls; the handler did not run", w.cfg.ID, w.cfg.Limits.MaxPerIdentity)
	case w.admitted.Add(1) > int64(w.cfg.Limits.MaxConcurrent+w.cfg.Limits.MaxQueued):
		w.admitted.Add(-1)
		w.shares.give(c)
		detail = fmt.Sprintf("worker %s has %d calls running and %d queued", w.cfg.ID, w.cfg.Limits.MaxConcurrent, w.cfg.Limits.MaxQueued)
	default:
		w.inflight.Add(1)
		return true
	}
	c.reject(w.problems.New(envelope.CodeOverloaded, detail).WithRetryAfter(w.cfg.Limits.OverloadRetryAfter.Seconds()))
	return false
}

// stop cancels every call in flight with cause. Call contexts are not
// children of stopCtx, which would put every call through one parent's
// lock twice; instead a call registering after this sweep sees stopCtx
// already done (see call.run).
func (w *Worker) stop(cause error) {
	w.stopCancel(cause)
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	for _, c := range w.calls {
		c.cancel(cause)
	}
}

// runner runs work: first j, then whatever idle work arrives, exiting
// after a quiet spell so an idle worker holds no goroutines.
func (w *Worker) runner(j work) {
	quiet := time.NewTimer(runnerIdle)
	defer quiet.Stop()
	for {
		j.run()
		quiet.Reset(runnerIdle)
		select {
		case j = <-w.idle:
		case <-quiet.C:
			return
		case <-w.stopCtx.Done():
			return
		}
	}
}

// runnerIdle is how long a runner goroutine waits for more work.
const runnerIdle = 10 * time.Second

// ToolStats returns the counters of tool, measured from admission to the
// terminal event of each call (accurate for concurrent handlers): the
// numbers the tool's $SRV.STATS endpoint carries.
func (w *Worker) ToolStats(name string) (fleet.Counters, bool) {
	w.mu.Lock()
	t, ok := w.tools[name]
	w.mu.Unlock()
	if !ok {
		return fleet.Counters{}, false
	}
	t.statsMu.Lock()
	defer t.statsMu.Unlock()
	return fleet.Counters{Requests: t.requests, Errors: t.errors, LastError: t.lastError, ProcessingTime: t.busy}, true
}

func (t *tool) record(d time.Duration, p *envelope.Problem) {
	t.load.observe(d, p)
	t.statsMu.Lock()
	t.requests++
	t.busy += d
	if p != nil {
		t.errors++
		// Code and title only: $SRV.STATS is readable by every caller (every
		// tenant, under deploy/secure), and a detail can quote a call's
		// args or a tool's output.
		t.lastError = string(p.Code) + ": " + p.Title
	}
	t.statsMu.Unlock()
}

// observeRun adds one handler run of d to the tool's typical run time:
// a moving average over about 32 runs (concurrent updates may drop one
// another's sample, which only slows it). It times the handler alone,
// not the call's waits before it, which grow with the machine's load.
func (t *tool) observeRun(d time.Duration) {
	avg := t.typical.Load()
	t.typical.Store(avg + (int64(min(d, maxRunSample))-avg)/32)
}

// maxRunSample caps one run's weight in a tool's typical run time: a
// fast handler preempted on a busy machine is not taken for a slow one,
// while a slow tool's average passes handoffAfter within about ten runs.
const maxRunSample = 4 * handoffAfter

// slowCalls reports whether the tool's calls typically run longer than
// a batch may wait behind one of them (handoffAfter).
func (t *tool) slowCalls() bool { return time.Duration(t.typical.Load()) > handoffAfter }

// maxPayload is the largest message the server takes.
func (w *Worker) maxPayload() int { return int(w.payload.Load()) }

// piece is the largest event that goes out in one message; larger ones
// are chunked. The rest of max_payload is room for the frame line.
func (w *Worker) piece() int { return w.maxPayload() - wire.ChunkOverhead }

// called is the name a call on subject called, for a tool serving a
// family of names; "" for every other tool.
func (t *tool) called(subject string) string {
	if t.familyAt == 0 || len(subject) <= t.familyAt {
		return ""
	}
	return subject[t.familyAt:]
}
