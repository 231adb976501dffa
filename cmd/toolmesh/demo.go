package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/ctxsleep"
	"github.com/toolmesh/toolmesh/worker"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// demoHints are the annotations every demo tool shares: it reads nothing
// outside itself and changes nothing.
func demoHints() *envelope.Annotations {
	return &envelope.Annotations{ReadOnly: yes(), Idempotent: yes(), OpenWorld: no()}
}

// countArgs are the count tool's arguments; its schema, defaults
// included, is inferred from the tags.
type countArgs struct {
	N          int `json:"n" jsonschema:"how many deltas to send" toolmesh:"default=5,minimum=0,maximum=100000"`
	IntervalMS int `json:"interval_ms" jsonschema:"milliseconds between deltas" toolmesh:"default=200,minimum=0,maximum=10000"`
}

// countDelta is one delta of the count tool.
type countDelta struct {
	I int `json:"i"`
}

// countResult is the count tool's result.
type countResult struct {
	Count int `json:"count"`
}

// sleepArgs are the sleep tool's arguments.
type sleepArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to sleep" toolmesh:"minimum=0,maximum=3600"`
}

// sleepResult is the sleep tool's result.
type sleepResult struct {
	SleptSeconds float64 `json:"slept_seconds"`
}

// registerDemo hosts the built-in demo tools of `toolmesh dev`.
func registerDemo(w *worker.Worker) error {
	// echo keeps a hand-written schema: it returns whatever object it is
	// given, member order included, so its input is raw JSON.
	if err := worker.AddTool(w, envelope.ToolSpec{Name: "echo", Title: "Echo", Description: "Returns its arguments unchanged.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
		Annotations: demoHints()}, demoEcho); err != nil {
		return err
	}
	if err := worker.AddStreamTool(w, envelope.ToolSpec{Name: "count", Title: "Count",
		Description: "Streams n deltas {\"i\":k}, one every interval_ms, with progress; returns {\"count\":n}.",
		Annotations: demoHints()}, demoCount); err != nil {
		return err
	}
	if err := worker.AddTool(w, envelope.ToolSpec{Name: "sleep", Title: "Sleep",
		Description: "Sleeps for seconds, honouring cancellation; returns {\"slept_seconds\":s}.",
		Annotations: demoHints()}, demoSleep); err != nil {
		return err
	}
	return worker.AddTool(w, envelope.ToolSpec{Name: "remove", Title: "Remove",
		Description: "Pretends to delete path, after asking its caller to confirm (nothing is deleted); returns {\"removed\":path} or {\"kept\":path}.",
		Annotations: &envelope.Annotations{ReadOnly: no(), Destructive: yes(), Idempotent: yes(), OpenWorld: no()}}, demoRemove)
}

// removeArgs are the remove tool's arguments.
type removeArgs struct {
	Path string `json:"path" jsonschema:"what to (pretend to) delete"`
}

// removeConfirm is the answer remove asks for.
type removeConfirm struct {
	Confirm bool `json:"confirm" jsonschema:"delete it?"`
}

// removeResult says what remove did.
type removeResult struct {
	Removed string `json:"removed,omitempty"`
	Kept    string `json:"kept,omitempty"`
}

// demoRemove asks before it "deletes": the demo of a tool asking its
// caller mid-call (docs/protocol.md §23). A caller that cannot answer gets
// input_required; a decline is the Problem declined.
func demoRemove(ctx context.Context, req *worker.Request, a removeArgs) (removeResult, error) {
	ok, err := worker.AskAs[removeConfirm](ctx, req, "Delete "+a.Path+"? (a demo: nothing is deleted)")
	if err != nil {
		return removeResult{}, err
	}
	if !ok.Confirm {
		return removeResult{Kept: a.Path}, nil
	}
	return removeResult{Removed: a.Path}, nil
}

func demoEcho(_ context.Context, _ *worker.Request, args json.RawMessage) (json.RawMessage, error) {
	return args, nil
}

func demoCount(ctx context.Context, _ *worker.Request, a countArgs, emit worker.TypedEmitter[countDelta]) (countResult, error) {
	tick := time.NewTicker(max(time.Duration(a.IntervalMS)*time.Millisecond, time.Microsecond))
	defer tick.Stop()
	for i := 1; i <= a.N; i++ {
		if a.IntervalMS > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return countResult{}, ctx.Err()
			}
		}
		if err := emit.Delta(countDelta{i}); err != nil {
			return countResult{}, err
		}
		if err := emit.Progress(float64(i)*100/float64(a.N), "counting"); err != nil {
			return countResult{}, err
		}
	}
	return countResult{a.N}, nil
}

func demoSleep(ctx context.Context, _ *worker.Request, a sleepArgs) (sleepResult, error) {
	if err := ctxsleep.Sleep(ctx, time.Duration(a.Seconds*float64(time.Second))); err != nil {
		return sleepResult{}, err
	}
	return sleepResult{a.Seconds}, nil
}
