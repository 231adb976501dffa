package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// presence announces the worker: a beacon every heartbeat interval on its
// presence subject (what Watch listens to), and a key in the JetStream
// registry when the server has JetStream (what lets Catalog know how many
// workers exist). Both end with a goodbye when the worker drains or stops.
type presence struct {
	w        *Worker
	registry jetstream.KeyValue // nil without JetStream
	revision int64              // guarded by mu
	mu       sync.Mutex
	// writing serialises registry writes, so the last written holds the
	// latest tool set (a write computes its value while holding it).
	writing sync.Mutex
	done    chan struct{}
	leave   sync.Once
	exited  chan struct{}
}

func (w *Worker) startPresence() {
	p := &presence{w: w, done: make(chan struct{}), exited: make(chan struct{})}
	w.presence = p
	p.registry = w.openRegistry()
	p.beacon(wire.BeaconUp)
	p.register()
	go p.loop()
}

// openRegistry opens (creating when missing) the worker registry bucket;
// nil when the server has no JetStream, which is not an error: Catalog
// then says it cannot know the fleet's size.
func (w *Worker) openRegistry() jetstream.KeyValue {
	if on, _ := w.nc.ConnectedServerJetStream(); !on {
		return nil // ask nothing of a server that has no JetStream
	}
	js, err := jetstream.New(w.nc)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(w.stopCtx, 2*time.Second)
	defer cancel()
	if refused := w.registryRefused(ctx); refused != "" {
		w.log.Warn("worker registry unavailable: this identity may not use the JetStream API, so the worker runs unregistered and catalogues will say they cannot know the fleet's size",
			"refused", refused)
		return nil
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: w.subjects.RegistryBucket(), TTL: wire.DefaultRegistryTTL, History: 1,
		Description: "toolmesh workers: one key per live worker",
	})
	if err != nil {
		if !errors.Is(err, jetstream.ErrJetStreamNotEnabled) && !errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			w.log.Warn("worker registry unavailable; catalogues will say they cannot know the fleet's size", "err", err)
		}
		return nil
	}
	return kv
}

// registryRefused returns the registry's JetStream API subject when the
// server refuses this identity a publish to it, "" otherwise. A request
// the server refuses is never answered, so without asking first every
// registry request would wait out its timeout (a pool under deploy/secure
// has no JetStream API: 2 s of worker.New). The probe is the first
// request opening the registry makes, the account info ($JS.API.INFO,
// which nats.go asks before it creates or updates the bucket's stream),
// flushed: the server reports a refused publish before it answers the
// flush. Its answer, if any, goes unread. An identity granted the
// bucket's stream subjects but not the account info could not open the
// registry either.
func (w *Worker) registryRefused(ctx context.Context) string {
	const subject = "$JS.API.INFO"
	if err := w.nc.PublishRequest(subject, w.nc.NewInbox(), nil); err != nil {
		return ""
	}
	if err := w.nc.FlushWithContext(ctx); err != nil {
		return ""
	}
	if op, denied, ok := wire.Violation(w.nc.LastError()); ok && op == wire.OpPublish && denied == subject {
		return subject
	}
	return ""
}

// refreshEvery is how often the worker rewrites its registry key.
func (w *Worker) refreshEvery() time.Duration { return max(wire.DefaultRegistryTTL/3, time.Second) }

func (p *presence) loop() {
	defer close(p.exited)
	// After an outage the registry key may have expired: re-register at
	// once on reconnect rather than at the next refresh.
	reconnected := p.w.nc.StatusChanged(nats.CONNECTED)
	defer p.w.nc.RemoveStatusListener(reconnected)
	beat := time.NewTicker(p.w.cfg.Liveness.Heartbeat)
	defer beat.Stop()
	refresh := time.NewTicker(p.w.refreshEvery())
	defer refresh.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-beat.C:
			p.beacon(wire.BeaconUp)
		case <-refresh.C:
			p.register()
		case <-reconnected:
			p.w.payload.Store(p.w.nc.MaxPayload()) // the new server may differ
			p.beacon(wire.BeaconUp)
			p.register()
		}
	}
}

// changed bumps the revision after the tool set changed and says so at
// once — unless the worker has already said goodbye.
func (p *presence) changed() {
	select {
	case <-p.done:
		return
	default:
	}
	p.mu.Lock()
	p.revision++
	p.mu.Unlock()
	p.beacon(wire.BeaconUp)
	p.register()
}

func (p *presence) current(state string) []byte {
	p.mu.Lock()
	rev := p.revision
	p.mu.Unlock()
	_, digest := p.w.catalogue()
	b, _ := json.Marshal(wire.Beacon{WorkerID: p.w.cfg.ID, State: state, Revision: rev, IntervalMS: p.w.cfg.Liveness.Heartbeat.Milliseconds(),
		Specs: digest, RefreshMS: p.w.refreshEvery().Milliseconds()})
	return b
}

func (p *presence) beacon(state string) {
	if err := p.w.nc.Publish(p.w.subjects.Presence(p.w.cfg.ID), p.current(state)); err != nil {
		p.w.log.Debug("presence beacon not sent", "err", err)
	}
}

func (p *presence) register() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.write(ctx); err != nil {
		p.w.log.Warn("worker registry refresh failed", "err", err)
	}
}

// write puts the worker's current beacon in the registry (nothing without
// one).
func (p *presence) write(ctx context.Context) error {
	if p.registry == nil {
		return nil
	}
	p.writing.Lock()
	defer p.writing.Unlock()
	_, err := p.registry.Put(ctx, p.w.cfg.ID, p.current(wire.BeaconUp))
	return err
}

// announceWait bounds Announce when its context has no deadline.
const announceWait = 10 * time.Second

// Announce writes the worker's registry entry and sends its presence
// beacon now, with the tools registered so far, and waits until the
// server has both: when it returns nil, Catalog lists every tool Register
// has accepted and Watch hears the worker. (Register announces too, but
// in the background.) Commands log "ready" only after it. A context
// without a deadline is bounded by 10 s.
func (w *Worker) Announce(ctx context.Context) error {
	p := w.presence
	select {
	case <-p.done:
		return errDraining
	default:
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, announceWait)
		defer cancel()
	}
	if err := p.write(ctx); err != nil {
		return fmt.Errorf("worker registry: %w", err)
	}
	p.beacon(wire.BeaconUp)
	return w.nc.FlushWithContext(ctx)
}

// goodbye ends the announcements: a gone beacon, and the registry key
// deleted. Idempotent.
func (p *presence) goodbye() {
	p.leave.Do(func() {
		close(p.done)
		<-p.exited
		if p.w.nc.IsClosed() {
			return
		}
		p.beacon(wire.BeaconGone)
		if p.registry != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.registry.Delete(ctx, p.w.cfg.ID)
		}
		_ = p.w.nc.Flush()
	})
}
