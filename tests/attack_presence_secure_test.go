package tests

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure verbatim: a worker pool may publish beacons only on
// its own pool's presence subjects, so the subject, not the body, says
// whose beacon it is. A demo worker's beacon on its own subject that
// names the fs worker as gone must not take fs.read out of bob's live
// catalogue: the demo pool's next real tool shows up, and fs.read was
// never removed.
func TestSecureAPoolCannotSpeakForAnotherPoolsWorkerInTheLiveCatalogue(t *testing.T) {
	m := startSecure(t)
	filesNC, _ := m.dial(t, "files")
	fs := meshtest.NewWorker(t, filesNC, worker.Config{Pool: "fs"})
	register(t, fs, envelope.ToolSpec{Name: "fs.read"}, echo)
	bob := m.caller(t, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	changes := make(chan catalog.Change, 64)
	go func() {
		for ch, err := range bob.Catalog().Watch(ctx) {
			if err != nil {
				return
			}
			changes <- ch
		}
	}()
	waitChange(t, changes, catalog.ToolAdded, "fs.read")
	demoNC, _ := m.dial(t, "tools")
	forged, _ := json.Marshal(wire.Beacon{WorkerID: fs.ID(), State: wire.BeaconGone, Revision: 99, IntervalMS: 1000})
	if err := demoNC.Publish("toolmesh.presence.demo.forger", forged); err != nil {
		t.Fatal(err)
	}
	if err := demoNC.Flush(); err != nil { // in the server's order before the sentinel's beacon
		t.Fatal(err)
	}
	register(t, m.demoWorker(t, worker.Config{}), envelope.ToolSpec{Name: "demo.sentinel"}, echo)
	for seen := range waitChanges(t, changes, catalog.ToolAdded, "demo.sentinel") {
		if seen.Kind == catalog.ToolRemoved && seen.Tool.Spec.Name == "fs.read" {
			t.Fatal("bob's live catalogue removed fs.read on the demo pool's beacon naming the fs worker gone")
		}
	}
}

// waitChange waits for the change kind of tool on changes.
func waitChange(t *testing.T, changes <-chan catalog.Change, kind catalog.ChangeKind, tool string) {
	t.Helper()
	for range waitChanges(t, changes, kind, tool) {
	}
}

// waitChanges yields every change on changes up to and including the
// change kind of tool.
func waitChanges(t *testing.T, changes <-chan catalog.Change, kind catalog.ChangeKind, tool string) func(func(catalog.Change) bool) {
	t.Helper()
	return func(yield func(catalog.Change) bool) {
		for {
			select {
			case ch := <-changes:
				if !yield(ch) || ch.Kind == kind && ch.Tool.Spec.Name == tool {
					return
				}
			case <-time.After(time.Minute):
				t.Fatalf("no %s of %s within a minute", kind, tool)
			}
		}
	}
}
