package caller_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/callsettings"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// Settings applies the caller's own options first and the call's after
// them, so that the call's win; what it reports is what a service client
// (package tasks) sends on.
func TestSettingsAppliesCallerOptionsThenTheCalls(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{Options: []caller.Option{caller.WithBearer("mine"), caller.WithTimeout(time.Minute)}})
	got := c.Settings(caller.WithTimeout(time.Second), caller.WithIdempotencyKey("k"), caller.Idempotent(), caller.Folded())
	want := callsettings.Settings{Bearer: "mine", IdempotencyKey: "k", Idempotent: true, Folded: true, Timeout: time.Second, PickupTimeout: caller.ConfigOf(c).PickupTimeout}
	if got != want {
		t.Fatalf("Settings = %+v, want %+v", got, want)
	}
	if got := c.Settings(); got.Bearer != "mine" || got.Timeout != time.Minute {
		t.Fatalf("Settings without call options = %+v, want the caller's own", got)
	}
}

// Service makes one caller per name under <prefix>.<name>, reuses it, and
// refuses once its caller is closed.
func TestServiceIsMadeOnceAndClosedWithItsCaller(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	c, err := caller.New(meshtest.Connect(t, e), caller.Config{Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Service("tasks")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Service("tasks")
	if err != nil || a != b {
		t.Fatalf("second Service = %p, %v; want the first, %p", b, err, a)
	}
	if cfg := caller.ConfigOf(a); cfg.Prefix != "p.tasks" || cfg.ID == c.ID() || cfg.Retries != caller.NoRetries {
		t.Fatalf("service caller config: prefix %q, id %q (parent %q), retries %d", cfg.Prefix, cfg.ID, c.ID(), cfg.Retries)
	}
	if got := caller.ConfigOf(c).Retries; got != caller.DefaultRetries {
		t.Fatalf("the config of a caller left at zero = %d, want DefaultRetries", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Service("tasks"); problemCode(t, err) != envelope.CodeCancelled {
		t.Fatalf("Service after Close: %v, want cancelled", err)
	}
	if _, err := a.Call(context.Background(), "x", nil); problemCode(t, err) != envelope.CodeCancelled {
		t.Fatalf("a call on the closed service caller: %v, want cancelled", err)
	}
}
