package meshtest_test

import (
	"context"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// double is the tool of ExampleNew.
func double(_ context.Context, _ *worker.Request, in struct{ N int }) (int, error) {
	return 2 * in.N, nil
}

// In a test, three lines give a server, a worker and a caller, all
// stopped when the test ends (the README's test kit, line for line).
func ExampleNew() {
	var t *testing.T // the test's own: func TestDouble(t *testing.T)
	ctx := context.Background()

	m := meshtest.New(t)
	worker.AddTool(m.Worker, envelope.ToolSpec{Name: "double"}, double)
	n, err := caller.CallAs[int](ctx, m.Caller, "double", map[string]int{"N": 21})
	if err != nil || n != 42 {
		t.Fatalf("double: %d, %v", n, err)
	}
}

func TestExampleNew(t *testing.T) {
	m := meshtest.New(t)
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "double"},
		func(_ context.Context, _ *worker.Request, in struct{ N int }) (int, error) { return 2 * in.N, nil }); err != nil {
		t.Fatal(err)
	}
	n, err := caller.CallAs[int](context.Background(), m.Caller, "double", map[string]int{"N": 21})
	if err != nil || n != 42 {
		t.Fatalf("double: %d, %v", n, err)
	}
	// A second caller on its own connection reaches the same worker.
	c := meshtest.NewCaller(t, m.Connect(t), caller.Config{})
	if n, err := caller.CallAs[int](context.Background(), c, "double", map[string]int{"N": 1}); err != nil || n != 2 {
		t.Fatalf("second caller: %d, %v", n, err)
	}
}
