package tests

import (
	"context"
	"encoding/json"
	"strings"
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
	resp, err := f.c.CallAll(context.Background(), "loop", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Items        []string
		Complete     bool
		MissingPages []string `json:"missing_pages"`
	}
	if err := json.Unmarshal(resp.Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Complete || len(got.Items) != 2 || len(got.MissingPages) != 1 || !strings.Contains(got.MissingPages[0], "twice") {
		t.Fatalf("repeated cursor gather: %s", resp.Data)
	}
}
