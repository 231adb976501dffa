package worker_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/workermw"
)

// Pair is the add tool's input: its schema (two required integers, no
// other members) is inferred from the type.
type Pair struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

// A typed tool: the schema comes from Pair, bad input never reaches the
// function, and the int result reaches Call as {"result": …}.
func ExampleAddTool() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = worker.AddTool(m.Worker, envelope.ToolSpec{Name: "add"},
		func(_ context.Context, _ *worker.Request, in Pair) (int, error) { return in.A + in.B, nil })
	if err != nil {
		log.Fatal(err)
	}

	sum, err := caller.CallAs[int](context.Background(), m.Caller, "add", Pair{A: 2, B: 3})
	fmt.Println(sum, err)
	_, err = m.Caller.Call(context.Background(), "add", map[string]any{"a": "two"})
	fmt.Println(err.(*envelope.Problem).Code)
	// Output:
	// 5 <nil>
	// invalid_input
}

// Greeting's `toolmesh` tags add a default and an enum to the inferred schema.
type Greeting struct {
	Name  string `json:"name"`
	Times int    `json:"times" toolmesh:"default=2,minimum=1"`
	Tone  string `json:"tone,omitempty" toolmesh:"enum=warm|dry"`
}

// A streaming typed tool: deltas are a Go type, defaults come from tags.
func ExampleAddStreamTool() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = worker.AddStreamTool(m.Worker, envelope.ToolSpec{Name: "greet"},
		func(_ context.Context, _ *worker.Request, in Greeting, emit worker.TypedEmitter[string]) (int, error) {
			for range in.Times {
				if err := emit.Delta("hello " + in.Name); err != nil {
					return 0, err
				}
			}
			return in.Times, nil
		})
	if err != nil {
		log.Fatal(err)
	}

	s, err := m.Caller.Stream(context.Background(), "greet", map[string]string{"name": "ann"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for ev, err := range s.Events() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(strings.TrimSpace(string(ev.Type) + " " + string(ev.Data)))
	}
	// Output:
	// start
	// delta "hello ann"
	// delta "hello ann"
	// result 2
}

// Middleware: every tool of this worker needs a bearer token, which the
// caller sends on every call; "slow" may also run only once at a time.
func ExampleConfig_middleware() {
	m, err := meshtest.Start(meshtest.Config{
		Worker: worker.Config{Middleware: []worker.Middleware{workermw.BearerTokens("s3cret")}},
		Caller: caller.Config{Options: []caller.Option{caller.WithBearer("s3cret")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = m.Worker.Register(envelope.ToolSpec{Name: "slow"}, worker.HandlerFunc(
		func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			return map[string]bool{"ok": true}, nil
		}),
		workermw.Concurrency(1))
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Caller.Call(context.Background(), "slow", nil)
	fmt.Println(string(resp.Data), err)
	// Output:
	// {"ok":true} <nil>
}

// A `toolmesh:"default=…"` fills in a member the call leaves out, never
// one it sends: a caller that shares the struct needs omitempty on the
// field, or it sends the zero value and the default never applies.
func ExampleAddTool_defaults() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	type Scaled struct {
		N     int `json:"n"`
		Times int `json:"times,omitempty" toolmesh:"default=10"`
	}
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "scale"},
		func(_ context.Context, _ *worker.Request, in Scaled) (int, error) { return in.N * in.Times, nil }); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	omitted, _ := caller.CallAs[int](ctx, m.Caller, "scale", Scaled{N: 2}) // times left out: 10
	type noOmitempty struct {
		N     int `json:"n"`
		Times int `json:"times"`
	}
	sent, _ := caller.CallAs[int](ctx, m.Caller, "scale", noOmitempty{N: 2}) // "times":0 sent
	fmt.Println(omitted, sent)
	// Output: 20 0
}

// A worker configured by what each setting bounds: its pool at the top,
// its limits grouped; every other setting keeps its default.
func ExampleConfig() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	nc, err := m.Server.Connect()
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()

	w, err := worker.New(nc, worker.Config{
		Pool:   "billing",
		Limits: worker.Limits{MaxConcurrent: 64, MaxPerIdentity: 8},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	fmt.Println(strings.HasPrefix(w.ID(), "billing."))
	// Output: true
}
