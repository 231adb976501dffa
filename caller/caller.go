package caller

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/caller/internal/coalesce"
	"github.com/toolmesh/toolmesh/caller/internal/liveness"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/ctxsleep"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/telemetry"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Config configures a Caller. The zero value is usable.
type Config struct {
	// ID identifies this caller (default: a new ULID); it is a subject token.
	ID string
	// Prefix is the mesh's subject prefix (default "toolmesh").
	Prefix string
	// InboxPrefix roots the caller's inbox (default "_INBOX").
	InboxPrefix string
	// Heartbeat is the interval workers are asked to beat at; once a worker
	// has spoken on a call, 3 silent intervals end it with worker_lost
	// (default 1s; kept within 100ms and 1m,
	// the bounds workers hold every interval to).
	Heartbeat time.Duration
	// PickupTimeout is how long a call may wait for a worker's first word
	// before it ends with worker_lost (default 10 heartbeat intervals, never
	// less than 3). It is longer than the heartbeat rule because a busy
	// worker cannot speak for calls still unread in its buffer; it is finite
	// because a worker that dies holding unread calls never will.
	PickupTimeout time.Duration
	// Retries is how many times a retry-safe failure is retried: 0 means
	// DefaultRetries, NoRetries means none (WithRetries overrides it per
	// call, with the same rule: its 0 keeps this setting).
	Retries int
	// MaxResultBytes caps one event reassembled from chunks (default
	// 64 MiB): past it the call ends payload_too_large
	// and the worker is told to stop, rather than the caller's memory
	// growing with whatever a worker sends.
	MaxResultBytes int
	// ProblemBaseURI is the base of problem type URIs.
	ProblemBaseURI string
	Logger         *slog.Logger
	// TracerProvider makes client spans (default: the global provider; while
	// none is installed, calls make no spans at all and cost nothing for it).
	TracerProvider trace.TracerProvider
	// Propagator writes trace context into call headers (default W3C trace context plus baggage).
	Propagator propagation.TextMapPropagator
	// Options apply to every call before the call's own (which win), so a
	// caller with one bearer token says so once: WithBearer(token).
	Options []Option
	// Middleware wraps every call (Call, CallAs, Stream, StreamAs, Dispatch),
	// the first outermost (see Middleware).
	Middleware []Middleware
	// NoCoalescing publishes every call on its own. By default a unary
	// call goes out at once, on the calling goroutine, when no publish to
	// its tool is in progress; calls made while one is, queue, and the
	// publishing goroutine sends them as one batch message (protocol v2,
	// §4.3) before it returns. Nothing waits on a timer to fill a batch: a
	// lone call is never delayed, and only calls that would have waited
	// for the connection anyway travel together. Streams are never
	// batched.
	NoCoalescing bool
	// KeepCallsAcrossReconnect keeps calls in flight while the connection
	// reconnects instead of ending them connection_lost at once: they are
	// judged by their worker's word as always (heartbeats, probes), and an
	// event lost while away ends a stream stream_gap. For a caller whose
	// every call is a long one worth keeping through a server's loss (the
	// task service, docs/protocol.md §22.9); the connection closing still
	// ends them.
	KeepCallsAcrossReconnect bool
}

// Caller invokes tools over one NATS connection.
type Caller struct {
	nc       *nats.Conn
	cfg      Config
	subjects wire.Subjects
	problems problembase.Registry
	tracer   *telemetry.Tracer
	prop     propagation.TextMapPropagator
	log      *slog.Logger
	inbox    string // <inbox-prefix>.<caller-id>.
	// pickupCutoff is how long after a call is sent a worker may still
	// take it up: one that reads it later refuses it unrun (1.5 heartbeat
	// intervals, at most half of PickupTimeout). Once it and one more
	// interval (the settle margin) have passed, a call no worker has named
	// did not run and will not, so a call whose worker died before taking
	// it up ends, ran "no", that soon after it was sent (protocol v2, §8.2).
	pickupCutoff time.Duration
	// intervalPair is the metadata pair " interval=<ms>", formatted once.
	intervalPair []byte
	// invoker is send wrapped in Config.Middleware, built once.
	invoker Invoker
	// spanOpts are the start options of every call's span, built once.
	spanOpts []trace.SpanStartOption
	sub      *nats.Subscription
	probe    *nats.Subscription // answers workers' liveness probes
	probes   *liveness.Probes   // this caller's probes of silent workers
	presence *liveness.Presence // the workers' beacons (presence.go)
	judge    liveness.Judge     // decides the fate of calls in flight
	beacons  *nats.Subscription // follows them
	markers  liveness.Markers   // settle markers in flight (settle.go sends them)
	statusCh chan nats.Status
	done     chan struct{}
	wg       sync.WaitGroup

	// epoch is when the caller was made: calls keep their times as
	// offsets from it (see at).
	epoch time.Time
	// ids makes the random part of every call id (see newID).
	idsMu sync.Mutex
	ids   *mrand.ChaCha8
	// notifiers, queues and streamQueues hold the wake-up channels,
	// one-event queues and stream queues of ended calls, for reuse.
	notifiers, queues, streamQueues sync.Pool

	// scratch holds a frame's events while they are parsed; only the
	// inbox callback (one goroutine) uses it.
	scratch []envelope.ToolEvent

	// payload is the connection's max_payload, read once per connection
	// rather than under the connection's lock for every call.
	payload atomic.Int64
	// reconnected is when the connection last came back (unix ns; 0: never
	// lost): for a while after, "no responders" may only mean that workers
	// have not yet re-subscribed (see noSuchTool).
	reconnected atomic.Int64

	// senders holds each tool's combining publisher, and counts the
	// batches they sent.
	senders coalesce.Senders[*pending]
	// cat is the caller's catalogue: Catalog returns it, Dispatch
	// searches it, and the liveness checks read the spec sets it has
	// seen (presence.go).
	cat *catalog.Catalog
	// services are the callers of mesh services Service has made.
	services services

	mu      sync.Mutex
	pending map[string]*pending
	// watches holds the shared watches of contexts that calls in flight
	// wait on, by Done channel; lastDone is the last call's (wait.go).
	watches  map[<-chan struct{}]*ctxWatch
	lastDone <-chan struct{}
	batches  map[string]*batch // batch reply token → its calls, while any is registered
	closed   bool
}

// withDefaults checks cfg and fills every unset field with its documented default.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.ID == "" {
		cfg.ID = ulid.Make().String()
	}
	if len(cfg.ID) > 128 || !wire.ValidWorkerID(cfg.ID) || strings.Contains(cfg.ID, ".") {
		// Workers refuse calls whose caller= is not 1-128 of [A-Za-z0-9_-].
		return cfg, envelope.Problemf(envelope.CodeInvalidConfig, "caller id %.40q: want 1-128 characters of A-Z a-z 0-9 _ -", cfg.ID)
	}
	if cfg.InboxPrefix == "" {
		cfg.InboxPrefix = "_INBOX"
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = wire.DefaultHeartbeat
	}
	cfg.Heartbeat = min(max(cfg.Heartbeat, wire.MinHeartbeat), wire.MaxHeartbeat)
	if cfg.PickupTimeout < wire.MissedBeats*cfg.Heartbeat {
		if cfg.PickupTimeout == 0 {
			cfg.PickupTimeout = wire.DefaultPickupBeats * cfg.Heartbeat
		} else {
			cfg.PickupTimeout = wire.MissedBeats * cfg.Heartbeat
		}
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = wire.DefaultMaxResultBytes
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = telemetry.DefaultPropagator()
	}
	return cfg, nil
}

// New creates a caller on nc and subscribes its inbox.
func New(nc *nats.Conn, cfg Config) (*Caller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Caller{
		nc:           nc,
		cfg:          cfg,
		subjects:     wire.Subjects{Prefix: cfg.Prefix},
		problems:     problembase.Registry{BaseURI: cfg.ProblemBaseURI},
		tracer:       telemetry.NewTracer(cfg.TracerProvider, "github.com/toolmesh/toolmesh/caller"),
		prop:         cfg.Propagator,
		log:          cfg.Logger.With("caller_id", cfg.ID),
		inbox:        cfg.InboxPrefix + "." + cfg.ID + ".",
		pickupCutoff: min(3*cfg.Heartbeat/2, cfg.PickupTimeout/2),
		intervalPair: wire.AppendIntPair(nil, wire.MetaInterval, cfg.Heartbeat.Milliseconds()),
		spanOpts:     []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
		pending:      map[string]*pending{},
		watches:      map[<-chan struct{}]*ctxWatch{},
		batches:      map[string]*batch{},
		probes:       liveness.NewProbes(),
		presence:     liveness.NewPresence(),
		done:         make(chan struct{}),
		epoch:        time.Now(),
	}
	c.cat = catalog.New(nc, catalog.Config{Prefix: cfg.Prefix, Heartbeat: cfg.Heartbeat, ProblemBaseURI: cfg.ProblemBaseURI, Logger: c.log})
	c.judge = liveness.Judge{Heartbeat: cfg.Heartbeat, PickupTimeout: cfg.PickupTimeout, PickupCutoff: c.pickupCutoff,
		Problems: c.problems, Probes: c.probes, Presence: c.presence, Known: c.knownSet, Fetch: c.fetchSets}
	var seed [32]byte
	_, _ = rand.Read(seed[:])
	c.ids = mrand.NewChaCha8(seed)
	c.payload.Store(nc.MaxPayload())
	c.invoker = chain(c.send, cfg.Middleware)
	// Before subscribing: nats.go hands a refusal to the error handler
	// installed when it arrives, and a refused presence subscription is
	// to be taken quietly (onViolation).
	wire.OnViolation(nc, c.onViolation)
	if err := c.subscribe(); err != nil {
		return nil, err
	}
	c.statusCh = nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	c.wg.Add(2)
	go c.watchConnection()
	go c.watchdog()
	return c, nil
}

// subscribe subscribes the caller's inbox and its liveness probe subject
// and waits for the server to confirm them.
func (c *Caller) subscribe() error {
	sub, err := c.nc.Subscribe(c.inbox+"*", c.onMsg)
	if err != nil {
		return fmt.Errorf("subscribe inbox: %w", err)
	}
	// The callback never blocks (events queue per call, bounded by the
	// credit window), so unlimited pending limits cannot grow without bound
	// and a slow reader can never cause a slow-consumer disconnect.
	_ = sub.SetPendingLimits(-1, -1)
	c.sub = sub
	// Liveness probes get their own subscription (and so their own
	// goroutine): a worker asking whether this caller lives is answered
	// at once, however many events wait unread in the inbox.
	probe, err := c.nc.Subscribe(c.inbox+wire.ProbeToken, func(m *nats.Msg) {
		if f, err := wire.ParseFrame(m.Data); err == nil && f.Kind == wire.FrameBeat {
			c.sendControl(f.Worker, wire.Control{Op: wire.OpAlive, CallerID: c.cfg.ID})
		}
	})
	if err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("subscribe liveness probe: %w", err)
	}
	c.probe = probe
	beacons, err := c.subscribePresence()
	if err != nil {
		_ = sub.Unsubscribe()
		_ = probe.Unsubscribe()
		return fmt.Errorf("subscribe presence: %w", err)
	}
	c.beacons = beacons
	if err := c.confirmInbox(); err != nil {
		_ = sub.Unsubscribe()
		_ = probe.Unsubscribe()
		_ = beacons.Unsubscribe()
		return err
	}
	return nil
}

// ID returns the caller's id.
func (c *Caller) ID() string { return c.cfg.ID }

// Catalog returns the caller's catalogue of the mesh (List, Watch,
// Describe, Search, SampleFleet), on the caller's connection and prefix.
// It is one per caller: the spec sets it learns also tell the caller's
// liveness checks which tools a silent worker hosts.
func (c *Caller) Catalog() *catalog.Catalog { return c.cat }

// Close fails the calls in flight with cancelled, unsubscribes and stops
// the caller's goroutines. The connection stays open.
func (c *Caller) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	calls := c.snapshot()
	c.mu.Unlock()
	for _, p := range calls {
		p.abandon(c.problems.New(envelope.CodeCancelled, "the caller was closed"))
	}
	close(c.done)
	c.services.close()
	c.nc.RemoveStatusListener(c.statusCh)
	err := c.sub.Unsubscribe()
	_ = c.probe.Unsubscribe()
	_ = c.beacons.Unsubscribe()
	c.wg.Wait()
	if errors.Is(err, nats.ErrConnectionClosed) {
		err = nil
	}
	return err
}

func (c *Caller) snapshot() []*pending {
	out := make([]*pending, 0, len(c.pending))
	for _, p := range c.pending {
		out = append(out, p)
	}
	return out
}

func (c *Caller) remove(id string) {
	c.mu.Lock()
	if p := c.pending[id]; p != nil {
		if p.batch != nil {
			if p.batch.left--; p.batch.left == 0 {
				delete(c.batches, p.batch.token)
			}
		}
		c.unwatchLocked(p)
	}
	delete(c.pending, id)
	c.mu.Unlock()
}

// onMsg routes one inbox message to its call (protocol v2, §5).
func (c *Caller) onMsg(m *nats.Msg) {
	if len(m.Data) == 0 {
		if status := wire.Header(m.Header, "Status"); status == "503" && !c.onProbeAnswer(m.Subject) {
			c.noResponders(m.Subject)
		}
		return // otherwise a worker closing a server-made reply stream after the terminal (see worker)
	}
	f, err := wire.ParseFrame(m.Data)
	if err == nil {
		switch f.Kind {
		case wire.FrameBeat:
			c.onBeat(f)
			return
		case wire.FrameEnds:
			c.onEnds(m.Subject, f)
			return
		}
	}
	p, b := c.route(m.Subject, f.ID)
	switch {
	case b != nil:
		c.onBatchMsg(b, f, err)
		return
	case p == nil:
		return // a call this caller no longer tracks; its worker's next beat gets a cancel
	case err != nil:
		p.fail(c.problems.New(envelope.CodeInternal, "malformed message from the worker: "+err.Error()), true)
	case f.Kind == wire.FrameChunk:
		p.chunk(f.Seq, f.Part, f.Parts, f.Payload)
	case f.Kind == wire.FrameBare && p.stream:
		p.deliverBareInStream(f.Payload)
	default:
		p.deliverFrame(f)
	}
}

// route finds what a reply on subject is for: the call named by id (a
// frame's id=, sent on a batch's subject) if it was sent on that subject
// — a worker can answer only the calls it was sent — or else the call or
// the batch the subject's last token names.
func (c *Caller) route(subject, id string) (*pending, *batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id != "" {
		if p := c.pending[id]; p != nil && c.sentOnLocked(p, subject) {
			return p, nil
		}
		return nil, nil
	}
	token := subject[strings.LastIndexByte(subject, '.')+1:]
	if p := c.pending[token]; p != nil {
		return p, nil
	}
	return nil, c.batches[token]
}

// noSuchTool is the Problem of a call nobody answers.
// Within PickupTimeout of this caller's reconnect, workers may simply not
// have re-subscribed yet (they reconnect on their own schedule), so the
// answer is transient — connection_lost, unrun, which Call retries —
// rather than a permanent tool_not_found. A tool_not_found names the tool
// nearest in name that this identity may call (catalog.Catalog.Suggest:
// the names its catalogue has, or one bounded read when it has none), so
// a typo is one step from its fix.
func (c *Caller) noSuchTool(tool string) *envelope.Problem {
	if at := c.reconnected.Load(); at != 0 {
		if since := time.Since(time.Unix(0, at)); since < c.cfg.PickupTimeout {
			return c.problems.New(envelope.CodeConnectionLost, fmt.Sprintf(
				"no worker hosts tool %s yet: the NATS connection came back %s ago and workers re-subscribe after their own reconnect; the call did not run",
				strconv.Quote(tool), since.Round(time.Millisecond))).WithRetryAfter(retryAfterReconnect.Seconds()).WithRan(envelope.RanNo)
		}
	}
	detail := "no worker hosts tool " + strconv.Quote(tool)
	near := c.cat.Suggest(context.Background(), tool)
	if near == "" {
		return c.problems.New(envelope.CodeToolNotFound, detail).WithRan(envelope.RanNo)
	}
	return c.problems.New(envelope.CodeToolNotFound, detail+"; did you mean "+strconv.Quote(near)+"?").WithRan(envelope.RanNo).
		WithFix(fmt.Sprintf("Call %s instead (`toolmesh tools list` shows every tool this identity may call)", near), envelope.MaybeIncorrect)
}

// retryAfterReconnect is the retry_after of a call that found no worker
// just after a reconnect.
const retryAfterReconnect = 250 * time.Millisecond

// onBatchMsg takes a message without id= on a batch's reply subject: it
// concerns the batch as a whole, which the worker refused before running
// any of its calls (protocol v2, §4.3). Its error ends every call of it.
func (c *Caller) onBatchMsg(b *batch, f wire.Frame, err error) {
	prob := c.problems.New(envelope.CodeInternal, "the worker answered a batch of calls with a message that names no call")
	if err == nil && f.Kind == wire.FrameBare {
		if ev, perr := envelope.ParseEvent(f.Payload); perr == nil && ev.Problem() != nil {
			prob = ev.Problem()
		}
	}
	c.failBatch(b, prob)
}

// onEnds delivers the replies of several calls of one batch, each the
// call's only event, numbered 1 (protocol v2, §4.3). A frame that does
// not add up ends every call of the batch: its worker is broken.
func (c *Caller) onEnds(subject string, f wire.Frame) {
	ids, events, err := f.Ends()
	if err != nil {
		prob := c.problems.New(envelope.CodeInternal, "malformed message from the worker: "+err.Error())
		switch p, b := c.route(subject, ""); {
		case b != nil:
			c.failBatch(b, prob)
		case p != nil:
			p.fail(prob, true)
		}
		return
	}
	for i, id := range ids {
		if p, _ := c.route(subject, id); p != nil {
			p.deliverJSON(1, events[i])
		}
	}
}

// noResponders ends the call, or every call of the batch, sent to a
// subject nobody subscribes to.
// The Problem is made off the subscription's goroutine: naming the
// nearest tool may read the catalogue once.
func (c *Caller) noResponders(subject string) {
	p, b := c.route(subject, "")
	if b != nil {
		go func() {
			for _, p := range b.calls {
				p.fail(c.noSuchTool(p.tool), false)
			}
		}()
		return
	}
	if p != nil {
		go func() { p.fail(c.noSuchTool(p.tool), false) }()
	}
}

// maxCancelsPerBeat bounds the cancels one heartbeat can cause (for calls
// it names that this caller no longer tracks); the rest go at later beats.
const maxCancelsPerBeat = 16

// onBeat takes a worker's heartbeat: every call it names has been heard
// from. A named call this caller no longer tracks (cancelled, timed out,
// abandoned before its worker was known) is still running there, so the
// worker is told to stop it.
func (c *Caller) onBeat(f wire.Frame) {
	interval := wire.Millis(f.Interval)
	now := time.Now()
	cancels := 0
	last := ""
	f.EachCallID(func(id []byte) {
		c.mu.Lock()
		p := c.pending[string(id)] // no copy: a lookup's key does not escape
		c.mu.Unlock()
		if p != nil && p.tool != last {
			last = p.tool
			c.probes.Hosts(p.tool, f.Worker, now)
			c.presence.Learn(f.Worker, p.tool)
		}
		if p == nil {
			// Bounded: a heartbeat naming thousands of unknown ids must not
			// make this caller publish thousands of messages.
			if cancels < maxCancelsPerBeat {
				cancels++
				c.sendControl(f.Worker, wire.Control{Op: wire.OpCancel, CallID: string(id)})
			}
			return
		}
		p.heard(f.Worker, interval, now)
	})
}

// maxPayload is the largest message the server takes.
func (c *Caller) maxPayload() int64 { return c.payload.Load() }

func (c *Caller) sendControl(workerID string, ctl wire.Control) {
	if !wire.ValidWorkerID(workerID) {
		return // a worker's id comes off the wire: never let it shape a subject
	}
	if err := c.nc.Publish(c.subjects.Control(workerID), ctl.Encode()); err != nil {
		c.log.Debug("control message not sent", "op", ctl.Op, "err", err)
	}
}

// watchConnection fails every call in flight as soon as the connection
// drops: events published while we are away are lost, so waiting for the
// timeout would only delay the inevitable.
func (c *Caller) watchConnection() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case st, ok := <-c.statusCh:
			if !ok {
				return
			}
			if st == nats.CONNECTED {
				c.payload.Store(c.nc.MaxPayload()) // the new server may differ
				c.reconnected.Store(time.Now().UnixNano())
				continue
			}
			if st != nats.CLOSED && c.cfg.KeepCallsAcrossReconnect {
				continue
			}
			c.mu.Lock()
			calls := c.snapshot()
			c.mu.Unlock()
			for _, p := range calls {
				p.fail(c.problems.New(envelope.CodeConnectionLost, fmt.Sprintf("the NATS connection was lost (%s) while the call was in flight; it may have run", st)).WithRan(envelope.RanMaybe), false)
			}
			if st == nats.CLOSED {
				return
			}
		}
	}
}

// watchdog ends calls whose worker is gone or fell silent and proves this
// caller alive to every worker it has calls on.
func (c *Caller) watchdog() {
	defer c.wg.Done()
	tick := time.NewTicker(max(c.cfg.Heartbeat/2, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case now := <-tick.C:
			c.checkCalls(now)
		}
	}
}

// checkCalls judges every call in flight once (see liveness.Judge), probes the
// workers that fell silent and sends alive to every worker with calls.
func (c *Caller) checkCalls(now time.Time) {
	c.mu.Lock()
	calls := c.snapshot()
	c.mu.Unlock()
	// A heartbeat may be waiting unread in the inbox, so while there is a
	// backlog a worker gets one more silent period before it is judged.
	backlog, _, _ := c.sub.Pending()
	workers := map[string]bool{}
	var waiting map[string]bool // tools with calls no worker has named for an interval
	settle := false
	for _, p := range calls {
		live := p.liveness()
		if live.Over {
			continue
		}
		switch prob, probe := c.judge.Fate(now, live, backlog > 0); {
		case prob != nil && !live.Spoken:
			settle = p.settleLater(prob, now) || settle
			continue
		case live.Due:
			settle = true // the marker may have been lost: another goes
			p.expireDue(now, c.judge.MarkerPatience(backlog > 0))
			continue
		case prob != nil:
			p.fail(prob, true)
			continue
		case probe:
			c.probeWorker(live.WorkerID, now)
		case !live.Spoken && now.Sub(live.Last) > c.cfg.Heartbeat:
			waiting = addKey(waiting, live.Tool)
		}
		if live.WorkerID != "" {
			workers[live.WorkerID] = true
		}
	}
	if settle {
		c.sendSettleMarker(now)
	}
	probed := c.probeHosts(waiting, now)
	c.probes.KeepOnly(workers, probed)
	c.presence.Forget(now)
	alive := wire.Control{Op: wire.OpAlive, CallerID: c.cfg.ID}
	for wid := range workers {
		c.sendControl(wid, alive)
	}
}

// addKey adds k to set, making the set on first use.
func addKey(set map[string]bool, k string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[k] = true
	return set
}

// probeHosts probes every worker heard lately on the tools in waiting,
// which have calls no worker has named for an interval: a worker that
// died holding them unread is found gone (its probe comes back 503)
// within about an interval, not only once calls it did name fall silent,
// so its unread calls settle soon after their cutoff (protocol v2, §8.2).
// It returns the workers probed.
func (c *Caller) probeHosts(waiting map[string]bool, now time.Time) map[string]bool {
	probed := map[string]bool{}
	for tool := range waiting {
		for _, wid := range c.judge.Suspects(tool, now) {
			if !probed[wid] {
				probed[wid] = true
				c.probeWorker(wid, now)
			}
		}
	}
	return probed
}

// callMode is how a call's events come back.
type callMode int

const (
	// unary: one terminal event; progress and deltas are not sent.
	unary callMode = iota
	// stream: every event, paced by the caller's credit window.
	stream
)

// start validates, encodes and publishes one call, registering it first.
func (c *Caller) start(ctx context.Context, tool string, args any, o callOptions, mode callMode) (*pending, *envelope.Problem) {
	if err := envelope.ValidateToolName(tool); err != nil {
		return nil, c.badToolName(err)
	}
	rawArgs, err := wire.Args(args)
	if err != nil {
		return nil, c.problems.New(envelope.CodeInvalidInput, "args: "+err.Error())
	}
	now := time.Now() // one reading for the budget, the id and the pickup cutoff
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline && deadline.Sub(now) <= 0 {
		return nil, c.problems.New(envelope.CodeTimeout, "the call's budget was spent before it was sent")
	}
	if err := ctx.Err(); err != nil {
		return nil, c.problems.Rebase(envelope.AsProblem(err, envelope.CodeCancelled))
	}
	p := &pending{c: c, tool: tool, stream: mode == stream, nextSeq: 1, lastHeard: c.offset(now)}
	id := c.newID(now)
	window := wire.DefaultWindow
	if o.window > 0 {
		window = max(o.window, 2)
	}
	span, traced := c.startSpan(ctx, tool, id, mode)
	pickup := now.Add(c.pickupCutoff) // read before sending: a cutoff no later than promised
	// The reply subject, <inbox><id>, heads the buffer the message is
	// encoded in: only the id outlives the publish.
	buf := append(append(make([]byte, 0, len(c.inbox)+len(id)+160+len(rawArgs)), c.inbox...), id...)
	reply := unsafe.String(unsafe.SliceData(buf), len(buf))
	body := c.appendMeta(buf[len(buf):], ctx, span, id, o, mode, window, pickup)
	if len(body) > wire.MaxMetaLine {
		span.End()
		return nil, c.problems.New(envelope.CodeInvalidInput, fmt.Sprintf(
			"the call's metadata line is %d bytes, more than the %d a worker reads: the bearer or idempotency key is too large", len(body), wire.MaxMetaLine))
	}
	body, prob := c.appendCall(body, rawArgs, o)
	if prob != nil {
		span.End()
		return nil, prob
	}
	p.id, p.pickup, p.maybe = id, c.offset(pickup), acceptsMaybe(o)
	if traced {
		p.extra = &pendingExtra{span: span}
	}
	if p.stream {
		p.rare = &pendingRare{window: window}
	}
	p.queue = c.eventQueue(mode)
	p.startAsking(ctx, o)
	if prob := c.publish(ctx, p, reply, body); prob != nil {
		return nil, prob
	}
	return p, nil
}

// newID makes a new call id: a ULID whose 80 random bits come from this
// caller's own ChaCha8 stream, seeded from crypto/rand: cryptographically
// strong, so no worker can guess the id of a call it was not sent (and
// name it in a heartbeat), without a system call per id.
func (c *Caller) newID(now time.Time) string {
	b := make([]byte, ulid.EncodedSize)
	c.appendID(b[:0], now)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// newReply makes a reply subject of its own, <inbox><id>, with a new id
// as its last token, in one allocation (for a batch of calls).
func (c *Caller) newReply(now time.Time) string {
	b := make([]byte, len(c.inbox)+ulid.EncodedSize)
	copy(b, c.inbox)
	c.appendID(b[:len(c.inbox)], now)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// appendID writes a new id into b's room for it (ulid.EncodedSize bytes).
func (c *Caller) appendID(b []byte, now time.Time) {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(now))
	c.idsMu.Lock()
	_, _ = c.ids.Read(id[6:])
	c.idsMu.Unlock()
	_ = id.MarshalTextTo(b[len(b) : len(b)+ulid.EncodedSize])
}

// sentOnLocked reports whether subject is the reply subject p was sent
// with: its batch's, or <inbox><id>; c.mu is held.
func (c *Caller) sentOnLocked(p *pending, subject string) bool {
	last := p.id
	if p.batch != nil {
		last = p.batch.token
	}
	return len(subject) == len(c.inbox)+len(last) && strings.HasPrefix(subject, c.inbox) && strings.HasSuffix(subject, last)
}

// offset is t as an offset from the caller's epoch, and at its inverse:
// calls keep their times so (pending.pickup, pending.lastHeard).
func (c *Caller) offset(t time.Time) time.Duration { return t.Sub(c.epoch) }

func (c *Caller) at(d time.Duration) time.Time { return c.epoch.Add(d) }

// notifier returns a wake-up channel for a new call: one that an ended
// call gave back, or a new one. A stale wake-up on a reused channel is
// harmless: a reader woken checks its queue and waits again.
func (c *Caller) notifier() chan struct{} {
	if ch, ok := c.notifiers.Get().(chan struct{}); ok {
		return ch
	}
	return make(chan struct{}, 1)
}

// eventQueue returns an empty queue for a new call: the one an ended
// call of its mode gave back — a unary call's holds one event, a
// stream's what its longest run of unread events needed (up to the
// credit window: without reuse each stream grew one from nothing, some
// 200 KB of garbage a stream) — or none yet (the first event makes one).
// Nothing queues on an ended call (see pending.queueLocked), so its
// queue is free once its terminal was read.
func (c *Caller) eventQueue(mode callMode) []envelope.ToolEvent {
	if mode == stream {
		if q, ok := c.streamQueues.Get().(*[]envelope.ToolEvent); ok {
			return (*q)[:0]
		}
		return nil
	}
	if q, ok := c.queues.Get().(*[1]envelope.ToolEvent); ok {
		return q[:0]
	}
	return nil
}

// giveBack returns p's wake-up channel, and its queue, for reuse once
// its terminal was read.
func (p *pending) giveBack() {
	p.mu.Lock()
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	switch {
	case p.stream && cap(q) > 0:
		// A variable of this branch's own: boxing q itself would move it
		// to the heap for every call, unary ones included.
		whole := q[:cap(q)]
		clear(whole) // the reader cleared what it took; this holds no event past the call
		p.c.streamQueues.Put(&whole)
	case cap(q) == 1:
		q = q[:1]
		q[0] = envelope.ToolEvent{}
		p.c.queues.Put((*[1]envelope.ToolEvent)(q))
	}
	if p.notify != nil {
		p.c.notifiers.Put(p.notify)
	}
}

// appendMeta appends the call's metadata line (protocol v2, §4.1): ids,
// interval, mode, budget, options, and trace context when there is any.
func (c *Caller) appendMeta(b []byte, ctx context.Context, span trace.Span, id string, o callOptions, mode callMode, window int, pickup time.Time) []byte {
	b = wire.AppendMetaStart(b)
	if mode == stream {
		// First, so that a worker refusing anything later in the line
		// answers in stream form (docs/protocol.md §6).
		b = wire.AppendPair(b, wire.MetaMode, wire.ModeStream)
		b = wire.AppendIntPair(b, wire.MetaWindow, int64(window))
	}
	b = wire.AppendPair(b, wire.MetaID, id)
	b = wire.AppendPair(b, wire.MetaCaller, c.cfg.ID)
	b = append(b, c.intervalPair...)
	// The wall-clock time after which a worker that reads the call refuses
	// it unrun: half the pickup timeout, so that a heartbeat naming a call
	// taken up in time reaches this caller before it reports the call not
	// run (protocol §8.2).
	b = wire.AppendIntPair(b, wire.MetaPickup, pickup.UnixMilli())
	if deadline, ok := ctx.Deadline(); ok {
		b = wire.AppendIntPair(b, wire.MetaTimeout, max(time.Until(deadline).Milliseconds(), 1))
	}
	if o.idempotencyKey != "" {
		b = wire.AppendPair(b, wire.MetaIdempotency, o.idempotencyKey)
	}
	if o.bearer != "" {
		b = wire.AppendPair(b, wire.MetaBearer, o.bearer)
	}
	if o.ask {
		b = wire.AppendPair(b, wire.MetaAsk, "1")
	}
	if o.fold && mode == stream {
		b = wire.AppendPair(b, wire.MetaFold, "1")
	}
	if acceptsMaybe(o) {
		b = wire.AppendPair(b, wire.MetaMaybe, "1")
	}
	if o.spec != "" {
		b = wire.AppendPair(b, wire.MetaSpec, o.spec)
	}
	if o.serverArgs {
		b = wire.AppendPair(b, wire.MetaServerArgs, "1")
	}
	// Trace context only when there is some: an untraced call pays for
	// one check, not for a propagator.
	if sc := span.SpanContext(); sc.IsValid() || baggage.FromContext(ctx).Len() > 0 {
		traced := b // only a traced call's buffer escapes to the carrier
		c.prop.Inject(trace.ContextWithSpan(ctx, span), metaCarrier{b: &traced})
		b = traced
	}
	return append(b, '\n')
}

// metaCarrier lets a propagator write trace context into a metadata line.
type metaCarrier struct{ b *[]byte }

// Get returns nothing: the carrier is write-only.
func (metaCarrier) Get(string) string { return "" }

// Set appends one pair.
func (m metaCarrier) Set(key, value string) { *m.b = wire.AppendPair(*m.b, key, value) }

// Keys returns nothing: the carrier is write-only.
func (metaCarrier) Keys() []string { return nil }

// appendCall appends the call's JSON body, refusing a call the server
// would not accept.
func (c *Caller) appendCall(b []byte, rawArgs json.RawMessage, o callOptions) ([]byte, *envelope.Problem) {
	b, err := callBody{Args: rawArgs, DryRun: o.dryRun, Page: o.page, ResponseFormat: o.format}.AppendJSON(b)
	if err != nil {
		return nil, c.problems.New(envelope.CodeInvalidInput, err.Error())
	}
	if limit := c.maxPayload() - 1024; int64(len(b)) > limit {
		return nil, c.problems.New(envelope.CodePayloadTooLarge,
			fmt.Sprintf("the call is %d bytes; the server accepts at most %d", len(b), limit)).
			WithFix(largeArgsFix, envelope.MaybeIncorrect)
	}
	return b, nil
}

// largeArgsFix says what to do about args too large to send.
const largeArgsFix = "Pass large inputs by reference — a path, URL or object-store key the tool can read — rather than inline in args, or raise the NATS server's max_payload."

// startSpan starts the call's client span; traced is false when tracing
// is off and the span a no-op.
func (c *Caller) startSpan(ctx context.Context, tool, id string, mode callMode) (span trace.Span, traced bool) {
	if c.tracer.Off(ctx) {
		return c.tracer.Noop(), false // not even the span's name is built
	}
	_, span = c.tracer.Start(ctx, "toolmesh.call "+tool, c.spanOpts...)
	if span.IsRecording() {
		span.SetAttributes(telemetry.SpanAttributes(tool, id, mode == stream)...)
	}
	return span, true
}

// publish registers p and sends its call; a call that cannot be sent is
// unregistered and its span ended with the Problem returned.
func (c *Caller) publish(ctx context.Context, p *pending, reply string, body []byte) *envelope.Problem {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		p.span().End()
		return c.problems.New(envelope.CodeCancelled, "the caller is closed")
	}
	if st := c.nc.Status(); st != nats.CONNECTED {
		// nats.go would hold the call in its reconnect buffer and send it
		// whenever the connection comes back, while this caller's clock
		// runs: say what is true now instead.
		c.mu.Unlock()
		prob := c.problems.New(envelope.CodeConnectionLost, fmt.Sprintf("the NATS connection is %s: the call was not sent", st)).WithRan(envelope.RanNo)
		p.endSpan(prob)
		return prob
	}
	c.chooseWakeLocked(ctx, p)
	c.pending[p.id] = p
	others := len(c.pending) > 1
	c.mu.Unlock()
	var err error
	if s := c.coalescer(p); s != nil {
		err = c.sendCoalesced(s, p, reply, body, others)
	} else {
		err = c.nc.PublishRequest(c.subjects.Call(p.tool), reply, body)
	}
	if err == nil {
		return nil
	}
	c.remove(p.id)
	prob := c.sendProblem(err)
	p.endSpan(prob)
	return prob
}

// coalescer returns the sender p may be coalesced by: nil for a stream,
// or when coalescing is off.
func (c *Caller) coalescer(p *pending) *sender {
	if p.stream || p.ask() != nil && p.ask().on || c.cfg.NoCoalescing {
		return nil
	}
	return c.senderFor(p.tool)
}

func (c *Caller) options(opts []Option) callOptions {
	if len(c.cfg.Options) == 0 && len(opts) == 0 {
		// Apart from applyOptions: handing &o to an Option makes it
		// escape, an allocation the common call without options skips.
		return callOptions{retries: c.cfg.Retries}
	}
	return c.applyOptions(opts)
}

// applyOptions applies the caller's and the call's options in that order.
func (c *Caller) applyOptions(opts []Option) callOptions {
	o := callOptions{retries: c.cfg.Retries}
	for _, f := range c.cfg.Options {
		f(&o)
	}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// acceptsMaybe reports whether a call lost before any worker named it may
// be reported ran "maybe" rather than "no": the call declares its tool
// idempotent or carries an idempotency key, so repeating it is safe
// whatever its ran says. The worker then need not wait for the server to
// confirm the heartbeat naming the call before starting it (protocol v2,
// §8.2), when its own spec of the tool agrees or the key is there.
func acceptsMaybe(o callOptions) bool { return o.idempotent || o.idempotencyKey != "" }

// retrySafe reports whether a failed attempt may be repeated.
func retrySafe(p *envelope.Problem, o callOptions) bool {
	if !p.Transient() {
		return false
	}
	if p.Code == envelope.CodeOverloaded || p.Ran() == envelope.RanNo {
		return true // the handler never ran
	}
	return o.idempotent || o.idempotencyKey != ""
}

// Call invokes tool with args (any JSON-marshalable object, or raw JSON)
// and waits for its terminal event. It returns the flattened Response, and
// a non-nil *envelope.Problem error when the call failed (the Response then
// carries the same failure). Retry-safe failures are retried, honouring
// retry_after: overloaded always, other transient failures only for
// idempotent calls (Idempotent, WithIdempotencyKey).
func (c *Caller) Call(ctx context.Context, tool string, args any, opts ...Option) (envelope.Response, error) {
	id, ev := c.invoke(ctx, tool, args, opts)
	resp, err := envelope.ResponseFromEvent(id, ev)
	if err != nil {
		p := c.problems.New(envelope.CodeInternal, err.Error())
		return envelope.ProblemResponse(id, p), p
	}
	if p := ev.Problem(); p != nil {
		return resp, p
	}
	return resp, nil
}

// CallEvent calls tool like Caller.Call (unary: one terminal event, no
// progress or deltas) and returns the call's id and its terminal event as
// it arrived: a result event's data is the tool's JSON value, unwrapped
// and validated once, or an error event carries the Problem. It is for
// relays that pass a result on as it came, such as the MCP gateway.
func (c *Caller) CallEvent(ctx context.Context, tool string, args any, opts ...Option) (string, envelope.ToolEvent) {
	return c.invoke(ctx, tool, args, opts)
}

// CallAs calls tool like Caller.Call and decodes its result into T,
// whatever the result's JSON kind: an object into a struct or map, a
// number, string or list (which Call would show as {"result": …}) into a
// value of that kind. A failed call returns its *envelope.Problem; a
// result that does not fit T is an output_invalid Problem.
func CallAs[T any](ctx context.Context, c *Caller, tool string, args any, opts ...Option) (T, error) {
	var out T
	_, ev := c.invoke(ctx, tool, args, opts)
	if p := ev.Problem(); p != nil {
		return out, p
	}
	if err := json.Unmarshal(ev.Data, &out); err != nil {
		return out, c.problems.New(envelope.CodeOutputInvalid, fmt.Sprintf("tool %s: the result does not fit %T: %v", tool, out, err))
	}
	return out, nil
}

// callEvent makes the call, retrying retry-safe failures (honouring
// retry_after), and returns its id and terminal event.
func (c *Caller) callEvent(ctx context.Context, tool string, args any, o callOptions) (string, envelope.ToolEvent) {
	return c.withRetries(ctx, tool, o, func(ctx context.Context) (string, envelope.ToolEvent, bool) {
		id, ev := c.callOnce(ctx, tool, args, o)
		return id, ev, false
	})
}

// withRetries runs attempts of a call within its timeout until one
// succeeds, one has delivered events to its reader (a stream's), or a
// failure may not be retried; it returns the last attempt's id and
// terminal event.
func (c *Caller) withRetries(ctx context.Context, tool string, o callOptions, attempt func(context.Context) (string, envelope.ToolEvent, bool)) (string, envelope.ToolEvent) {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	var a attempts
	for {
		id, ev, delivered := attempt(ctx)
		p := ev.Problem()
		if p == nil || delivered {
			return id, ev
		}
		if !c.again(ctx, p, o, &a) {
			return id, c.settled(ctx, tool, o, p, ev, a)
		}
	}
}

func (c *Caller) callOnce(ctx context.Context, tool string, args any, o callOptions) (string, envelope.ToolEvent) {
	p, prob := c.start(ctx, tool, args, o, unary)
	if prob != nil {
		return "", envelope.ErrorEvent(prob)
	}
	for {
		ev, err := p.next(ctx)
		if err != nil { // only after the terminal, which we return below
			return p.id, envelope.ErrorEvent(c.problems.New(envelope.CodeInternal, err.Error()))
		}
		if ev.IsTerminal() {
			return p.id, ev
		}
	}
}

// waitRetry sleeps retry_after (bounded by ctx); false when ctx ends first.
func (c *Caller) waitRetry(ctx context.Context, p *envelope.Problem) bool {
	return ctxsleep.Sleep(ctx, time.Duration(*p.RetryAfter*float64(time.Second))) == nil
}

func (p *pending) endSpan(prob *envelope.Problem) { telemetry.EndSpan(p.span(), prob) }

// badToolName is the Problem of a malformed tool name: invalid_input with
// a fix about names, not the schema violations a call's args would have.
func (c *Caller) badToolName(err error) *envelope.Problem {
	return c.problems.New(envelope.CodeInvalidInput, err.Error()).
		WithFix("Tool names are dot-separated segments of letters, digits, _ and -; list the tools on offer with Catalog.", envelope.MaybeIncorrect)
}
