package caller_test

import (
	"context"
	"fmt"
	"log"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
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
