package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// StreamName is the audit stream's name.
const StreamName = "TOOLMESH_AUDIT"

// Subjects is what the audit stream captures under prefix.
func Subjects(prefix string) string { return prefix + ".audit.>" }

// Limits bound what the audit stream keeps; zero means no bound.
type Limits struct {
	MaxAge   time.Duration
	MaxBytes int64
	Replicas int
}

// EnsureStream creates the audit stream if it is not there and returns
// its configuration. The stream is append-only: no message may be
// deleted or the stream purged through the JetStream API (DenyDelete,
// DenyPurge), and only its limits age records out. An existing stream is
// left as it is (its limits are the operator's to change).
func EnsureStream(ctx context.Context, js jetstream.JetStream, prefix string, lim Limits) (jetstream.StreamConfig, error) {
	if s, err := js.Stream(ctx, StreamName); err == nil {
		return s.CachedInfo().Config, nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return jetstream.StreamConfig{}, err
	}
	cfg := jetstream.StreamConfig{Name: StreamName, Description: "toolmesh audit trail: who called what, when, and how it ended",
		Subjects: []string{Subjects(prefix)}, Storage: jetstream.FileStorage, Retention: jetstream.LimitsPolicy,
		MaxAge: lim.MaxAge, MaxBytes: max(lim.MaxBytes, -1), Replicas: max(lim.Replicas, 1),
		DenyDelete: true, DenyPurge: true, Discard: jetstream.DiscardOld}
	if lim.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	s, err := js.CreateStream(ctx, cfg)
	if err != nil {
		return jetstream.StreamConfig{}, err
	}
	return s.CachedInfo().Config, nil
}

// Filter selects records: by tool (a subject token pattern: "demo.echo",
// "demo.*", "demo.>"), by identity ("ALICE/alice", or a tenant "ALICE/"
// or person "alice"), and by time.
type Filter struct {
	Tool     string
	Identity string
	Since    time.Time
}

// Match reports whether rec passes the identity filter (the tool and the
// time are filtered by the server).
func (f Filter) Match(rec wire.AuditRecord) bool {
	switch {
	case f.Identity == "":
		return true
	case strings.HasSuffix(f.Identity, "/"):
		return rec.Tenant+"/" == f.Identity
	case strings.Contains(f.Identity, "/"):
		return rec.Identity == f.Identity
	default:
		return rec.Person == f.Identity
	}
}

// Read hands fn each record that f selects, oldest first, through an
// ordered consumer; with follow it goes on with new records until ctx
// ends, else it returns once nothing it selects is left unread. A message
// that is not a record is handed to bad (if not nil) and skipped: anyone
// allowed to publish a record could publish one, and the stream lets
// nobody remove it, so stopping there would end the trail for good.
func Read(ctx context.Context, js jetstream.JetStream, prefix string, f Filter, follow bool, fn func(wire.AuditRecord) error, bad func(subject string, err error)) error {
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		return err
	}
	cc := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if f.Tool != "" {
		cc.FilterSubjects = []string{prefix + ".audit." + f.Tool}
	}
	if !f.Since.IsZero() {
		since := f.Since
		cc.DeliverPolicy, cc.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	cons, err := s.OrderedConsumer(ctx, cc)
	if err != nil {
		return err
	}
	return readLoop(ctx, cons, f, follow, fn, bad)
}

// readLoop is Read's loop over the consumer's messages.
func readLoop(ctx context.Context, cons jetstream.Consumer, f Filter, follow bool, fn func(wire.AuditRecord) error, bad func(string, error)) error {
	for {
		if !follow {
			info, err := cons.Info(ctx)
			if err != nil {
				return err
			}
			if info.NumPending == 0 {
				return nil // read all that was there
			}
		}
		msgs, err := cons.Fetch(100, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		for m := range msgs.Messages() {
			var rec wire.AuditRecord
			if err := json.Unmarshal(m.Data(), &rec); err != nil {
				if bad != nil {
					bad(m.Subject(), fmt.Errorf("audit message on %s is not a record: %w", m.Subject(), err))
				}
				continue
			}
			if f.Match(rec) {
				if err := fn(rec); err != nil {
					return err
				}
			}
		}
		if err := msgs.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
