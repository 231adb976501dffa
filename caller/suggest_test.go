package caller_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// A call of a tool nobody hosts names the nearest tool the caller may
// call, in the detail and as the suggested fix; never the tool itself.
func TestToolNotFoundSuggestsNearestTool(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, e), worker.Config{})
	for _, name := range []string{"echo", "count"} {
		if err := w.Register(envelope.ToolSpec{Name: name}, worker.HandlerFunc(
			func(context.Context, *worker.Request, worker.Emitter) (any, error) { return map[string]any{}, nil })); err != nil {
			t.Fatal(err)
		}
	}
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	for _, tc := range []struct{ call, want string }{{"ecoh", "echo"}, {"cuont", "count"}, {"echo2", "echo"}} {
		_, err := c.Call(context.Background(), tc.call, map[string]any{})
		var p *envelope.Problem
		if !errors.As(err, &p) || p.Code != envelope.CodeToolNotFound {
			t.Fatalf("call %s: %v, want tool_not_found", tc.call, err)
		}
		if !strings.Contains(p.Detail, `did you mean "`+tc.want+`"?`) || p.SuggestedFix == nil || !strings.Contains(p.SuggestedFix.Description, tc.want) {
			t.Fatalf("call %s: %+v (fix %+v), want a suggestion of %s", tc.call, p, p.SuggestedFix, tc.want)
		}
	}
}
