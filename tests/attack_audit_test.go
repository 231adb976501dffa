package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/internal/audit"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Under deploy/secure verbatim: a worker pool writes the audit records of
// its own tools only. A demo worker's record of fs.wipe, naming bob, is
// refused by the server and never reaches the trail; and a message on
// its own pool's subject that is not a record does not stop `toolmesh
// audit` (the stream is append-only, so nobody could ever remove it):
// the reader skips it, says so, and reads the records after it.
func TestSecureAWorkerPoolCannotForgeOrPoisonTheAuditTrail(t *testing.T) {
	m := startSecure(t)
	tasksNC, _ := m.dial(t, "tasks")
	js, err := jetstream.New(tasksNC)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := audit.EnsureStream(ctx, js, "toolmesh", audit.Limits{MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	demo, demoErrs := m.dial(t, "tools")
	forged, _ := json.Marshal(wire.AuditRecord{Time: time.Now(), Kind: "call", Worker: "fs-1", Identity: "BOB/bob",
		Tenant: "BOB", Person: "bob", Tool: "fs.wipe", CallID: "01JFORGEDFORGEDFORGEDFORGE", Outcome: "ok", Ran: "yes"})
	genuine, _ := json.Marshal(wire.AuditRecord{Time: time.Now(), Kind: "call", Worker: "demo-1", Identity: "ALICE/alice",
		Tenant: "ALICE", Person: "alice", Tool: "demo.echo", CallID: "01JGENUINEGENUINEGENUINEGE", Outcome: "ok", Ran: "yes"})
	if err := demo.Publish("toolmesh.audit.demo.echo", []byte("not a record")); err != nil {
		t.Fatal(err)
	}
	if err := demo.Publish("toolmesh.audit.fs.wipe", forged); err != nil {
		t.Fatal(err)
	}
	if err := demo.Publish("toolmesh.audit.demo.echo", genuine); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the demo pool's fs.wipe record to be refused", func() bool {
		for _, e := range demoErrs.all() {
			if strings.Contains(e.Error(), `Permissions Violation for Publish to "toolmesh.audit.fs.wipe"`) {
				return true
			}
		}
		return false
	})
	var skipped []string
	var recs []wire.AuditRecord
	waitFor(t, "the genuine record past the message that is not one", func() bool {
		skipped, recs = nil, nil
		err := audit.Read(ctx, js, "toolmesh", audit.Filter{}, false, func(r wire.AuditRecord) error {
			recs = append(recs, r)
			return nil
		}, func(subject string, _ error) { skipped = append(skipped, subject) })
		if err != nil {
			t.Fatalf("reading the trail: %v", err)
		}
		return len(recs) > 0
	})
	if len(recs) != 1 || recs[0].CallID != "01JGENUINEGENUINEGENUINEGE" {
		t.Fatalf("the trail holds %+v; want the demo pool's genuine record alone", recs)
	}
	if len(skipped) != 1 || skipped[0] != "toolmesh.audit.demo.echo" {
		t.Fatalf("skipped %v; want the one message that is not a record", skipped)
	}
}
