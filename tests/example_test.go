package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// A whole mesh in one process: an embedded server, a worker hosting a
// streaming tool, and a caller reading its events.
func Example() {
	ctx := context.Background()
	srv, _ := embedded.Start(ctx, embedded.Config{InProcessOnly: true}) // package mesh/embedded
	defer srv.Shutdown(ctx)

	wnc, _ := srv.Connect()
	defer wnc.Close()
	w, _ := worker.New(wnc, worker.Config{})
	_ = w.Register(envelope.ToolSpec{
		Name:        "greet",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	}, worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
		var a struct{ Name string }
		if err := req.Bind(&a); err != nil {
			return nil, err
		}
		_ = emit.Progress(50, "thinking")
		_ = emit.Delta(map[string]string{"token": "Hello, "})
		return map[string]string{"greeting": "Hello, " + a.Name}, nil
	}))
	defer w.Drain(ctx)

	cnc, _ := srv.Connect()
	defer cnc.Close()
	c, _ := caller.New(cnc, caller.Config{})
	defer c.Close()

	// Unary: one Response, data flattened.
	resp, _ := c.Call(ctx, "greet", map[string]string{"name": "Ada"})
	fmt.Println(resp.Success, string(resp.Data))

	// Streaming: every event in order, ending with the terminal one.
	s, _ := c.Stream(ctx, "greet", map[string]string{"name": "Lin"})
	for ev := range s.Events() {
		fmt.Println(strings.TrimSpace(fmt.Sprint(ev.Type, " ", string(ev.Data))))
	}

	// Failures are Problems an agent can act on.
	_, err := c.Call(ctx, "greet", map[string]int{"name": 7})
	p := err.(*envelope.Problem)
	fmt.Println(p.Code, p.ExitCode, p.RetryAfter == nil)
	// Output:
	// true {"greeting":"Hello, Ada"}
	// start
	// progress
	// delta {"token":"Hello, "}
	// result {"greeting":"Hello, Lin"}
	// invalid_input 2 true
}
