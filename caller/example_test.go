package caller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// CallAs decodes the result into a Go value of any JSON kind: here a
// list, which Call would show as {"result": [...]}.
func ExampleCallAs() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	type in struct {
		N int `json:"n"`
	}
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "squares"},
		func(_ context.Context, _ *worker.Request, a in) ([]int, error) {
			out := make([]int, a.N)
			for i := range out {
				out[i] = (i + 1) * (i + 1)
			}
			return out, nil
		}); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	sq, err := caller.CallAs[[]int](ctx, m.Caller, "squares", in{N: 4})
	fmt.Println(sq, err)
	resp, _ := m.Caller.Call(ctx, "squares", in{N: 2})
	fmt.Println(string(resp.Data))
	// Output:
	// [1 4 9 16] <nil>
	// {"result":[1,4]}
}

// Caller middleware sees every Call and CallAs once (retries happen
// inside it) and may answer without sending anything.
func ExampleMiddleware() {
	onlyReads := func(next caller.Invoker) caller.Invoker {
		return func(ctx context.Context, inv *caller.Invocation) (string, envelope.ToolEvent) {
			if inv.Tool != "read" {
				return "", envelope.ErrorEvent(envelope.NewProblem(envelope.CodeForbidden, "this caller only reads"))
			}
			return next(ctx, inv)
		}
	}
	m, err := meshtest.Start(meshtest.Config{Caller: caller.Config{Middleware: []caller.Middleware{onlyReads}}})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	_, err = m.Caller.Call(context.Background(), "write", nil)
	fmt.Println(err.(*envelope.Problem).Code)
	// Output:
	// forbidden
}

// StreamAs reads a streaming tool's deltas and result as Go values, the
// caller's side of worker.AddStreamTool's TypedEmitter.
func ExampleStreamAs() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	type in struct {
		N int `json:"n"`
	}
	type line struct {
		I    int    `json:"i"`
		Text string `json:"text"`
	}
	type total struct {
		Lines int `json:"lines"`
	}
	if err := worker.AddStreamTool(m.Worker, envelope.ToolSpec{Name: "lines"},
		func(_ context.Context, _ *worker.Request, a in, emit worker.TypedEmitter[line]) (total, error) {
			for i := 1; i <= a.N; i++ {
				if err := emit.Delta(line{I: i, Text: fmt.Sprint("line ", i)}); err != nil {
					return total{}, err
				}
			}
			return total{Lines: a.N}, nil
		}); err != nil {
		log.Fatal(err)
	}

	s, err := caller.StreamAs[line, total](context.Background(), m.Caller, "lines", in{N: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for l, err := range s.Deltas() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(l.I, l.Text)
	}
	fmt.Println(s.Result())
	// Output:
	// 1 line 1
	// 2 line 2
	// 3 line 3
	// {3} <nil>
}

// Stream reads a call's events as they come: start, progress, deltas and
// exactly one terminal event. Close ends the call when the loop stops
// early; Response gives the terminal as Call would have.
func ExampleCaller_Stream() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Worker.Register(envelope.ToolSpec{Name: "count", Streaming: true}, worker.HandlerFunc(
		func(_ context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
			for i := 1; i <= 3; i++ {
				if err := emit.Delta(i); err != nil {
					return nil, err
				}
			}
			return map[string]int{"counted": 3}, nil
		}))
	if err != nil {
		log.Fatal(err)
	}

	s, err := m.Caller.Stream(context.Background(), "count", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for ev, err := range s.Events() {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Type {
		case envelope.EventDelta:
			fmt.Println("delta", string(ev.Data))
		case envelope.EventResult:
			fmt.Println("result", string(ev.Data))
		}
	}
	// Output:
	// delta 1
	// delta 2
	// delta 3
	// result {"counted":3}
}

// A failed call's error is a *envelope.Problem: errors.As finds it, its
// Code says what went wrong, and Transient whether a retry may help. A
// call whose context ran out is also errors.Is context.DeadlineExceeded.
func Example_problems() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	type in struct {
		N int `json:"n"`
	}
	err = worker.AddTool(m.Worker, envelope.ToolSpec{Name: "wait"},
		func(ctx context.Context, _ *worker.Request, a in) (int, error) {
			<-ctx.Done() // a tool that never finishes in time
			return 0, ctx.Err()
		})
	if err != nil {
		log.Fatal(err)
	}

	_, err = m.Caller.Call(context.Background(), "wait", map[string]string{"n": "seven"})
	var p *envelope.Problem
	if errors.As(err, &p) {
		fmt.Println(p.Code, p.Transient())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = m.Caller.Call(ctx, "wait", in{N: 7}, caller.WithRetries(caller.NoRetries))
	if errors.As(err, &p) {
		fmt.Println(p.Code, p.Transient(), errors.Is(err, context.DeadlineExceeded))
	}
	// Output:
	// invalid_input false
	// timeout true true
}

// Dispatch runs the tool calls of a model's turn on the mesh and returns
// the provider's tool-result messages, in the calls' order.
func ExampleCaller_Dispatch() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	type Pair struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *worker.Request, in Pair) (int, error) { return in.A + in.B, nil }); err != nil {
		log.Fatal(err)
	}
	ctx, c := context.Background(), m.Caller
	specs := m.Worker.Specs()
	modelTurnJSON := json.RawMessage(`{"role":"assistant","content":[
		{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":2,"b":3}}]}`)

	ts, _ := provider.Export(specs, provider.ExportOptions{Provider: provider.Anthropic, Model: "claude-sonnet-4-5"})
	// ts.Tools → the request's "tools"; ts.Names maps provider names ↔ mesh names
	d, err := c.Dispatch(ctx, ts, modelTurnJSON, caller.WithConcurrency(4),
		caller.OnEvent(func(e caller.DispatchEvent) { /* progress, deltas as they come */ }))
	// d.Messages → append to the conversation (one user message of tool_results here)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(d.Messages), string(d.Messages[0]))
	// Output:
	// 1 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"5"}]}]}
}
