package tests

import (
	"context"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// A tool that hands back a cursor it already gave would be walked
// forever; CallAll stops and says the gather is incomplete.
func TestCallAllStopsOnRepeatedCursor(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "loop"}, func(_ context.Context, r *worker.Request, _ worker.Emitter) (any, error) {
		if r.Page != nil && r.Page.Cursor != "" {
			return map[string]any{"items": []string{r.Page.Cursor}, "next_cursor": "again"}, nil
		}
		return map[string]any{"items": []string{"first"}, "next_cursor": "again"}, nil
	})
	wantPartialGather(t, f.c, "loop", 2, "twice")
}
