package tests

import (
	"context"
	"fmt"
	"log"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

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
