package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// registerDemo hosts the built-in demo tools of `toolmesh dev`.
func registerDemo(w *worker.Worker) error {
	tools := []struct {
		spec envelope.ToolSpec
		h    worker.HandlerFunc
	}{
		{envelope.ToolSpec{Name: "echo", Title: "Echo", Description: "Returns its arguments unchanged.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
			Annotations: &envelope.Annotations{ReadOnly: yes(), Idempotent: yes(), OpenWorld: no()}}, demoEcho},
		{envelope.ToolSpec{Name: "count", Title: "Count", Description: "Streams n deltas {\"i\":k}, one every interval_ms, with progress; returns {\"count\":n}.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":100000,"default":5},"interval_ms":{"type":"integer","minimum":0,"maximum":10000,"default":200}},"additionalProperties":false}`),
			Streaming:   true, Annotations: &envelope.Annotations{ReadOnly: yes(), Idempotent: yes(), OpenWorld: no()}}, demoCount},
		{envelope.ToolSpec{Name: "sleep", Title: "Sleep", Description: "Sleeps for seconds, honouring cancellation; returns {\"slept_seconds\":s}.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":3600}},"required":["seconds"],"additionalProperties":false}`),
			Annotations: &envelope.Annotations{ReadOnly: yes(), Idempotent: yes(), OpenWorld: no()}}, demoSleep},
	}
	for _, t := range tools {
		if err := w.Register(t.spec, t.h); err != nil {
			return err
		}
	}
	return nil
}

func demoEcho(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	return req.Args, nil
}

func demoCount(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
	a := struct {
		N          int `json:"n"`
		IntervalMS int `json:"interval_ms"`
	}{N: 5, IntervalMS: 200}
	if err := req.Bind(&a); err != nil {
		return nil, envelope.NewProblem(envelope.CodeInvalidInput, err.Error())
	}
	tick := time.NewTicker(max(time.Duration(a.IntervalMS)*time.Millisecond, time.Microsecond))
	defer tick.Stop()
	for i := 1; i <= a.N; i++ {
		if a.IntervalMS > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err := emit.Delta(map[string]int{"i": i}); err != nil {
			return nil, err
		}
		if err := emit.Progress(float64(i)*100/float64(a.N), "counting"); err != nil {
			return nil, err
		}
	}
	return map[string]int{"count": a.N}, nil
}

func demoSleep(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	var a struct {
		Seconds float64 `json:"seconds"`
	}
	if err := req.Bind(&a); err != nil {
		return nil, envelope.NewProblem(envelope.CodeInvalidInput, err.Error())
	}
	t := time.NewTimer(time.Duration(a.Seconds * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return map[string]float64{"slept_seconds": a.Seconds}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
