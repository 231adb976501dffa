package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// probeConf is one account whose user alice may call demo.* but may not
// ask the server for her permissions, so her catalogue must probe.
const probeConf = `
accounts {
  A {
    users: [
      { user: tools, password: tools }
      { user: alice, password: alice, permissions: {
          publish: { allow: ["toolmesh.call.demo.>", "toolmesh.catalog", "toolmesh.catalog.>", "toolmesh.describe.>"] }
          subscribe: { allow: ["_INBOX.>"] } } }
    ]
  }
}
`

// Where the server does not say what an identity may call, the catalogue
// lists only the tools the server accepted a probe for, says so, and no
// probe runs a tool; Describe is forbidden for a refused name and
// tool_not_found for an allowed one nobody hosts.
func TestProbedViewFailsClosed(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(probeConf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartServerFromConfig(t, conf)
	dial := func(user string) *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, user), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	var ran atomic.Int64
	w := meshtest.NewWorker(t, dial("tools"), worker.Config{Logger: meshtest.Quiet()})
	for _, name := range []string{"demo.echo", "fs.read_file", "fs.write_file"} {
		if err := w.Register(envelope.ToolSpec{Name: name}, worker.HandlerFunc(
			func(context.Context, *worker.Request, worker.Emitter) (any, error) {
				ran.Add(1)
				return map[string]any{}, nil
			})); err != nil {
			t.Fatal(err)
		}
	}
	cat := catalog.New(dial("alice"), catalog.Config{Logger: meshtest.Quiet()})
	ctx := context.Background()
	for range 2 { // the second read decides from what the first learnt
		l, err := cat.List(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range l.Tools {
			names = append(names, tl.Spec.Name)
		}
		if !slices.Equal(names, []string{"demo.echo"}) {
			t.Fatalf("alice's catalogue = %v, want only demo.echo", names)
		}
		if !slices.ContainsFunc(l.ScopeWarnings, func(w string) bool { return strings.Contains(w, "probe publish") }) {
			t.Fatalf("the listing does not say it probed: %q", l.ScopeWarnings)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the probes ran %d handlers", n)
	}
	var p *envelope.Problem
	if _, err := cat.Describe(ctx, "fs.read_file"); !errors.As(err, &p) || p.Code != envelope.CodeForbidden {
		t.Fatalf("describe fs.read_file = %v, want forbidden", err)
	}
	if _, err := cat.Describe(ctx, "demo.nosuch"); !errors.As(err, &p) || p.Code != envelope.CodeToolNotFound {
		t.Fatalf("describe demo.nosuch = %v, want tool_not_found", err)
	}
	if s, err := cat.Describe(ctx, "demo.echo"); err != nil || s.Name != "demo.echo" {
		t.Fatalf("describe demo.echo = %+v %v", s, err)
	}
}
