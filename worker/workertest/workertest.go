package workertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// ErrEnded is what an emit returns once End was called, as a worker's
// emitter fails once its call has ended.
var ErrEnded = errors.New("workertest: emit after the call ended")

// Recorder is a worker.Emitter that keeps every event emitted, in order.
// It is safe for concurrent use, as a handler's emitter is.
type Recorder struct {
	mu     sync.Mutex
	events []envelope.ToolEvent
	ended  bool
}

var _ worker.LogEmitter = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Progress records a progress event.
func (r *Recorder) Progress(pct float64, message string) error {
	return r.record(envelope.ProgressEvent(pct, message))
}

// Log records a log message's progress event (worker.LogEmitter).
func (r *Recorder) Log(m envelope.LogMessage) error {
	return r.record(envelope.LogEvent(m))
}

// Delta records a delta event: data encoded as JSON, or a
// json.RawMessage as it is, as the worker does.
func (r *Recorder) Delta(data any) error {
	raw, ok := data.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return fmt.Errorf("delta: %w", err)
		}
	}
	if !json.Valid(raw) {
		return errors.New("delta: not valid JSON")
	}
	return r.record(envelope.ToolEvent{Type: envelope.EventDelta, Data: raw})
}

func (r *Recorder) record(ev envelope.ToolEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return ErrEnded
	}
	r.events = append(r.events, ev)
	return nil
}

// End marks the call ended: later emits fail with ErrEnded, as they do
// on a worker once the handler has returned.
func (r *Recorder) End() {
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
}

// Events returns a copy of the events recorded so far, in order.
func (r *Recorder) Events() []envelope.ToolEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]envelope.ToolEvent(nil), r.events...)
}

// Deltas returns the data of the delta events recorded so far, in order.
func (r *Recorder) Deltas() []json.RawMessage {
	var out []json.RawMessage
	for _, ev := range r.Events() {
		if ev.Type == envelope.EventDelta {
			out = append(out, ev.Data)
		}
	}
	return out
}

// DeltasAs decodes every delta recorded so far into D, in order.
func DeltasAs[D any](r *Recorder) ([]D, error) {
	raws := r.Deltas()
	out := make([]D, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("delta %d: %w", i+1, err)
		}
	}
	return out, nil
}

// NewRequest returns the request of a streaming call of tool with args
// (any JSON-marshalable value; json.RawMessage as it is), with a fixed
// call id. Like httptest.NewRequest it panics when args cannot be
// encoded: that is a mistake in the test itself.
func NewRequest(tool string, args any) *worker.Request {
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			panic(fmt.Sprintf("workertest.NewRequest: args: %v", err))
		}
	}
	return &worker.Request{
		Tool:      tool,
		CallID:    "01WORKERTEST0000000000CALL",
		Args:      raw,
		Streaming: true,
		Spec:      &envelope.ToolSpec{Name: tool, Streaming: true},
	}
}
