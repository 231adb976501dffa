package tasks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/envelope"
)

// Entry kinds of the task log (§22.2).
const (
	kindTask  = "task"
	kindEvent = "event"
)

// entry is one message of a task's log: a record snapshot, or an event.
type entry struct {
	Kind string `json:"kind"`
	Record
	// Dispatched, on a queued record, is the attempt offered to the
	// workers since: it may run (§22.6).
	Dispatched int             `json:"dispatched,omitempty"`
	N          int             `json:"n,omitempty"`
	Event      json.RawMessage `json:"event,omitempty"`
	Object     string          `json:"object,omitempty"`
	Size       int             `json:"size,omitempty"`
	// Call, on a task's submit entry only, is everything an attempt needs;
	// the bearer in it is never answered (§22.4).
	Call *queuedCall `json:"call,omitempty"`
}

// stored is an entry read back with its stream sequence and subject.
type stored struct {
	entry
	seq     uint64
	subject string
}

// isSubmit reports whether the entry is the task's submit: no later entry
// (on the .e subject) exists yet.
func (st *stored) isSubmit() bool { return !strings.HasSuffix(st.subject, ".e") }

// terminalEvent decodes the entry's event and reports whether it ends the task.
func (e *entry) terminal() (envelope.ToolEvent, bool) {
	if e.Kind != kindEvent || len(e.Event) == 0 {
		return envelope.ToolEvent{}, false
	}
	ev, err := envelope.ParseEvent(e.Event)
	return ev, err == nil && ev.IsTerminal()
}

// errConflict says an append's expected last sequence no longer held:
// someone else moved the task first.
var errConflict = errors.New("the task moved on meanwhile")

// ownerKey is the owner key of an identity (§22.1).
func ownerKey(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:16])
}

// stamp formats a time as the records do: RFC 3339, UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// transient reports whether a JetStream request failed in a way that a
// retry may cure: a leader election, a server going away.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// No leader yet, cluster busy; a full per-subject limit is also a
		// 503, but final: the queue is full (§22.6).
		return (apiErr.Code == 503 || apiErr.Code == 500) && !strings.Contains(apiErr.Description, "maximum")
	}
	return strings.Contains(err.Error(), "timeout")
}

// retry runs op until it succeeds, fails for good, or ctx ends; JetStream
// requests fail transiently while a replicated stream elects a leader.
func retry[T any](ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	pause := 50 * time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := op(rctx)
		cancel()
		if !transient(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// appendEntry appends e under subject, expecting the subject's last
// sequence to be expect (0: no entry on it yet), so that of two parties
// moving a task at once exactly one succeeds; the other gets errConflict.
// This is the per-subject expectation every server since 2.9 checks. A
// retried append that had in fact been stored is recognised by reading
// the subject's last entry back.
func (s *Service) appendEntry(ctx context.Context, subject string, e *entry, msgID string, expect uint64) (*jetstream.PubAck, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(expect)}
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	tries := 0
	ack, err := retry(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
		tries++
		return s.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, opts...)
	})
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || (apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence &&
		apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return ack, err
	}
	if tries > 1 {
		if m, gerr := s.logs.GetLastMsgForSubject(ctx, subject); gerr == nil && bytes.Equal(m.Data, data) {
			return &jetstream.PubAck{Stream: s.names.logStream, Sequence: m.Sequence}, nil
		}
	}
	return nil, errConflict
}

// decode reads a log message.
func decode(m *jetstream.RawStreamMsg) (*stored, error) {
	st := &stored{seq: m.Sequence, subject: m.Subject}
	if err := json.Unmarshal(m.Data, &st.entry); err != nil {
		return nil, err
	}
	return st, nil
}

// lastEntry reads a task's last log entry; nil when the log has none.
func (s *Service) lastEntry(ctx context.Context, subject string) (*stored, error) {
	m, err := retry(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return s.logs.GetLastMsgForSubject(ctx, subject)
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decode(m)
}

// entryAt reads the log entry at seq (the first on the subject at or
// after seq when subject is set); nil when there is none.
func (s *Service) entryAt(ctx context.Context, seq uint64, subject string) (*stored, error) {
	var opts []jetstream.GetMsgOpt
	if subject != "" {
		opts = append(opts, jetstream.WithGetMsgSubject(subject))
	}
	m, err := retry(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return s.logs.GetMsg(ctx, seq, opts...)
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decode(m)
}

// eventJSON returns an event entry's event, from the object store when
// the entry names an object (§22.8).
func (s *Service) eventJSON(ctx context.Context, e *entry) (json.RawMessage, error) {
	if e.Object == "" {
		return e.Event, nil
	}
	return retry(ctx, func(ctx context.Context) (json.RawMessage, error) {
		return s.objs.GetBytes(ctx, e.Object)
	})
}
