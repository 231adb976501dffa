package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
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

// Pair is the README's typed tool input.
type Pair struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b,omitempty" toolmesh:"default=1"`
}

// readmeMesh starts the in-process mesh the README's snippets run on,
// handing back its worker and caller as w and c with a context as ctx,
// the names the snippets use; the example closes the mesh.
func readmeMesh() (*meshtest.Mesh, context.Context, *worker.Worker, *caller.Caller) {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	return m, context.Background(), m.Worker, m.Caller
}

// The README's typed tool, line for line: schemas inferred from Pair, B
// defaulting to 1 when left out.
func Example_typedTools() {
	m, ctx, w, c := readmeMesh()
	defer m.Close()

	worker.AddTool(w, envelope.ToolSpec{Name: "add"},
		func(ctx context.Context, _ *worker.Request, in Pair) (int, error) { return in.A + in.B, nil })
	sum, err := caller.CallAs[int](ctx, c, "add", Pair{A: 2, B: 3}) // 5
	fmt.Println(sum, err)
	sum, err = caller.CallAs[int](ctx, c, "add", Pair{A: 2})
	fmt.Println(sum, err)
	// Output:
	// 5 <nil>
	// 3 <nil>
}

// Path and Out are the README's rm tool's input and result.
type (
	Path struct {
		Path string `json:"path"`
	}
	Out struct {
		Deleted bool `json:"deleted"`
	}
)

// The README's question, line for line: the tool asks for a Confirm, the
// caller's callback accepts, the tool goes on with the answer.
func Example_questions() {
	m, ctx, w, c := readmeMesh()
	defer m.Close()
	args := Path{Path: "/tmp/x"}
	deleted := make(chan bool, 1)

	type Confirm struct {
		Confirm bool `json:"confirm"`
	}
	worker.AddTool(w, envelope.ToolSpec{Name: "rm"}, func(ctx context.Context, req *worker.Request, in Path) (Out, error) {
		ok, err := worker.AskAs[Confirm](ctx, req, "Delete "+in.Path+"?") // schema inferred from Confirm
		if err != nil {
			return Out{}, err // declined, cancelled, input_required or input_timeout: a Problem as it is
		}
		deleted <- ok.Confirm
		return Out{Deleted: ok.Confirm}, nil
	})
	c.Call(ctx, "rm", args, caller.OnQuestion(func(ctx context.Context, q caller.Question) (caller.Answer, error) {
		return caller.Accept(Confirm{Confirm: true})
	}))
	fmt.Println(<-deleted)
	// Output: true
}
