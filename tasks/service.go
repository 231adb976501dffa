package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/worker"
)

// Config configures a Service. The zero value is usable.
type Config struct {
	// Prefix is the mesh's subject prefix (default "toolmesh"); the
	// task API lives under Prefix+".tasks".
	Prefix string
	// Retention is how long a task's log, events and result are kept
	// (default 24h); then the task answers task_expired.
	Retention time.Duration
	// MaxQueuedPerTool bounds each owner's tasks of one tool not yet
	// ended (default 1024); past it submit answers overloaded, to that
	// owner only. The bound is per instance, as the running bounds are:
	// each counts the tasks submitted through it that have not yet ended
	// (no write, no read per submit), so N instances take up to N times
	// it, and a restarted instance counts afresh.
	MaxQueuedPerTool int64
	// MaxTasksPerOwner bounds the tasks one identity keeps within the
	// retention, ended ones included (0: no bound); past it submit
	// answers task_quota_exceeded.
	MaxTasksPerOwner int64
	// MaxBytesPerOwner bounds the bytes one identity's tasks keep within
	// the retention: their args and recorded events (0: no bound); past
	// it submit answers task_quota_exceeded.
	MaxBytesPerOwner int64
	// MaxStoreBytes bounds the size of each of the task stream and the
	// object store (0: no bound); a full store refuses new tasks with
	// task_quota_exceeded rather than dropping old ones.
	MaxStoreBytes int64
	// MaxRunningPerOwner bounds one owner's tasks each instance runs (or
	// holds for the owner's turn) at once (default 64): one owner's flood
	// takes no more of the instance's runners, nor of a worker's share of
	// the service's calls, while instances run owners round robin.
	MaxRunningPerOwner int
	// MaxRunningPerOwnerTool bounds one owner's tasks of one tool each
	// instance runs at once (default 16).
	MaxRunningPerOwnerTool int
	// MaxAttempts bounds the attempts of a re-runnable task (default 3).
	MaxAttempts int
	// Replicas is the streams' replica count: 1, or 3 on a cluster.
	Replicas int
	// Heartbeat is the liveness interval of the service's own calls to
	// workers and of its API worker (default 1s).
	Heartbeat time.Duration
	// Logger receives the service's log (default: discarded).
	Logger *slog.Logger
	// Middleware wraps the task API's handlers (submit, cancel, answer…),
	// the first outermost: workermw.Audit records each task action with
	// the identity of the person who took it.
	Middleware []worker.Middleware
	// OnRefused hears of the task API calls refused before Middleware
	// saw them (bad args, overload…): see worker.Config.OnRefused and
	// workermw.AuditRefused.
	OnRefused func(ctx context.Context, req *worker.Request, p *envelope.Problem)

	// Set by New, not by users: the largest (and the default) task budget
	// (Retention), how long an idempotency key finds its task (1h, at most
	// Retention), how long a queued call may go without an in-progress ack
	// before JetStream hands it to another instance (30s), how many
	// task API calls are served at once (4096), and the first pause before
	// re-running a lost attempt (1s, doubling up to 30s).
	maxTaskTimeout time.Duration
	dedupeWindow   time.Duration
	ackWait        time.Duration
	maxConcurrent  int
	retryBackoff   time.Duration
}

func (cfg Config) withDefaults() Config {
	if cfg.Prefix == "" {
		cfg.Prefix = wire.DefaultPrefix
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 24 * time.Hour
	}
	if cfg.MaxQueuedPerTool <= 0 {
		cfg.MaxQueuedPerTool = 1024
	}
	if cfg.MaxRunningPerOwner <= 0 {
		cfg.MaxRunningPerOwner = 64
	}
	if cfg.MaxRunningPerOwnerTool <= 0 {
		cfg.MaxRunningPerOwnerTool = 16
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.maxTaskTimeout <= 0 || cfg.maxTaskTimeout > cfg.Retention {
		cfg.maxTaskTimeout = cfg.Retention
	}
	if cfg.dedupeWindow <= 0 {
		cfg.dedupeWindow = time.Hour
	}
	cfg.dedupeWindow = min(cfg.dedupeWindow, cfg.Retention)
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.ackWait <= 0 {
		cfg.ackWait = 30 * time.Second
	}
	if cfg.retryBackoff <= 0 {
		cfg.retryBackoff = time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.maxConcurrent <= 0 {
		cfg.maxConcurrent = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Service is one instance of the task service. Any number may run on a
// mesh; they share the streams and divide the work.
type Service struct {
	nc    *nats.Conn
	cfg   Config
	log   *slog.Logger
	js    jetstream.JetStream
	names names
	logs  jetstream.Stream // the one task stream: every task's queue item and log
	objs  jetstream.ObjectStore
	usage jetstream.Stream // each owner's usage, when quotas are set
	api   *worker.Worker
	call  *caller.Caller // asks the catalogue; attempts run on owners
	// owners are the callers that run attempts, one per owner.
	owners ownerCallers
	cons   jetstream.ConsumeContext
	kill   *nats.Subscription
	// answers carries answers to the questions of attempts running here
	// (§23.9).
	answers *nats.Subscription

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[string]*attemptRun // task id → its attempt running here
	wake    wakers
	fair    fairQueue
	open    openTasks
	done    *nats.Subscription
	// instance names this instance in the notices it publishes.
	instance string
}

// names are the subjects and JetStream names of one mesh's task service.
type names struct {
	base, logStream, objects, usage, consumer string
}

func namesFor(prefix string) names {
	flat := strings.NewReplacer(".", "_", "*", "_", ">", "_").Replace(prefix)
	return names{base: prefix + ".tasks", logStream: "TOOLMESH_TASKS_" + flat,
		objects: "TOOLMESH_TASKOBJ_" + flat, usage: "TOOLMESH_TASKUSE_" + flat, consumer: "dispatch"}
}

// A task's entries (§22.2): its submit, which is also its queue item, under
// <base>.log.<owner>.<id>.q.<tool>; every later entry under
// <base>.log.<owner>.<id>.e, each written expecting that subject's last
// sequence, so that of two writers racing (a run and a cancel, two
// terminals) exactly one wins.
func (n names) taskPrefix(owner, id string) string { return n.base + ".log." + owner + "." + id }
func (n names) queueSubject(owner, id, tool string) string {
	return n.taskPrefix(owner, id) + ".q." + tool
}
func (n names) eventSubject(owner, id string) string { return n.taskPrefix(owner, id) + ".e" }
func (n names) taskFilter(owner, id string) string   { return n.taskPrefix(owner, id) + ".>" }
func (n names) queueFilter() string                  { return n.base + ".log.*.*.q.>" }
func (n names) killSubject(id string) string         { return n.base + ".kill." + id }
func (n names) answerSubject(id string) string       { return n.base + ".answer." + id }
func (n names) doneSubject(owner, id string) string {
	return n.base + ".done." + owner + "." + id
}

// New starts a task service on nc: it makes (or updates) the streams, then
// starts serving the task API and running queued tasks.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	s := &Service{nc: nc, cfg: cfg, log: cfg.Logger, js: js, names: namesFor(cfg.Prefix),
		running: map[string]*attemptRun{}, owners: ownerCallers{byOwner: map[string]*ownerCaller{}},
		wake: wakers{waits: map[string]map[chan notice]struct{}{}},
		fair: fairQueue{owners: map[string]*ownerQueue{}}, open: openTasks{byTool: map[string]map[string]time.Time{}},
		instance: nats.NewInbox()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.openStorage(ctx); err != nil {
		s.cancel()
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.Close(ctx)
		return nil, err
	}
	s.warnOldQueue(ctx)
	return s, nil
}

// warnOldQueue says so when the queue stream of a task service predating
// the one-stream layout still holds tasks: this service does not run
// them (their records are under subjects it no longer reads).
func (s *Service) warnOldQueue(ctx context.Context) {
	flat := strings.TrimPrefix(s.names.logStream, "TOOLMESH_TASKS_")
	old, err := s.js.Stream(ctx, "TOOLMESH_TASKQ_"+flat)
	if err != nil {
		return
	}
	if info, err := old.Info(ctx); err == nil && info.State.Msgs > 0 {
		s.log.Warn("tasks queued by an older task service are not run by this one; let an older service finish them, or delete the stream",
			"stream", info.Config.Name, "tasks", info.State.Msgs)
	}
}

// openStorage makes the task stream and the object store.
func (s *Service) openStorage(ctx context.Context) error {
	var err error
	s.logs, err = s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: s.names.logStream, Subjects: []string{s.names.base + ".log.>"},
		Retention: jetstream.LimitsPolicy, MaxAge: s.cfg.Retention, Duplicates: s.cfg.dedupeWindow,
		// The queue is a consumer over the tasks' submit entries, not a
		// stream of its own: a submit is one write.
		// Direct gets may be answered by any replica, a lagging follower
		// too: a task just ended would read as running, and a wait for its
		// end would miss it. Replicated, reads go to the leader.
		Replicas: s.cfg.Replicas, AllowDirect: s.cfg.Replicas == 1,
		MaxBytes: s.maxBytes(), Discard: jetstream.DiscardNew,
	})
	if err != nil {
		return fmt.Errorf("task log stream: %w", err)
	}
	s.objs, err = s.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: s.names.objects, TTL: s.cfg.Retention, Replicas: s.cfg.Replicas, MaxBytes: s.maxBytes(),
	})
	if err != nil {
		return fmt.Errorf("task object store: %w", err)
	}
	if !s.quotas() {
		return nil
	}
	// One message per owner, replaced by compare-and-set; a stream under
	// the task subjects, which the task service's permissions already
	// grant (deploy/secure), rather than a KV bucket under $KV.
	s.usage, err = s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: s.names.usage, Subjects: []string{s.names.base + ".use.>"},
		MaxMsgsPerSubject: 1, MaxAge: s.cfg.Retention + time.Hour, Replicas: s.cfg.Replicas,
		AllowDirect: s.cfg.Replicas == 1,
	})
	if err != nil {
		return fmt.Errorf("task usage bucket: %w", err)
	}
	return nil
}

// maxBytes is the streams' MaxBytes: the operator's bound, or none (-1).
func (s *Service) maxBytes() int64 {
	if s.cfg.MaxStoreBytes > 0 {
		return s.cfg.MaxStoreBytes
	}
	return -1
}

// start opens the inner caller, the kill subscription, the API worker and
// the queue consumer.
func (s *Service) start(ctx context.Context) error {
	var err error
	if s.call, err = caller.New(s.nc, s.callerConfig()); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.closeIdleCallers()
	if s.kill, err = s.nc.Subscribe(s.names.base+".kill.*", s.onKill); err != nil {
		return err
	}
	if s.answers, err = s.nc.Subscribe(s.names.base+".answer.*", s.onAnswer); err != nil {
		return err
	}
	if s.done, err = s.nc.Subscribe(s.names.base+".done.>", s.onDone); err != nil {
		return err
	}
	s.wakeOnReconnect()
	if err := s.startAPI(); err != nil {
		return err
	}
	return s.startRunners(ctx)
}

// Close stops taking work: the API worker drains, the consumer stops, and
// attempts in flight are left to JetStream (another instance takes them
// after the ack wait), their calls cancelled.
func (s *Service) Close(ctx context.Context) {
	if s.api != nil {
		_ = s.api.Drain(ctx)
	}
	if s.cons != nil {
		s.cons.Stop()
	}
	s.cancel()
	s.wg.Wait()
	for _, sub := range []*nats.Subscription{s.kill, s.answers, s.done} {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
	s.closeCallers(func(*ownerCaller) bool { return true })
	if s.call != nil {
		_ = s.call.Close()
	}
}

// onKill cancels the attempt of a task running here (§22.6 cancel).
func (s *Service) onKill(m *nats.Msg) {
	id := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	s.mu.Lock()
	r := s.running[id]
	s.mu.Unlock()
	if r != nil {
		r.cancel(errKilled)
	}
}

var errKilled = errors.New("the task was cancelled")
