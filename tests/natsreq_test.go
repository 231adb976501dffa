package tests

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// natsReq finds the concrete `nats req SUBJECT 'BODY'` commands of a
// document (placeholders such as <p> or … are left out).
var natsReq = regexp.MustCompile(`nats req ([A-Za-z0-9_.]+) '(\{[^'…]*\})'`)

// Every `nats req` the README and docs/protocol.md show works as written,
// and the bare arguments object the README warns about is invalid_input
// with a fix that shows the form that works (not "see violations").
func TestNatsReqAsWritten(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, echo)
	var found int
	for _, doc := range []string{"../README.md", "../docs/protocol.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range natsReq.FindAllStringSubmatch(string(text), -1) {
			found++
			ev := natsRequest(t, f, m[1], m[2])
			if ev.Problem() != nil || !strings.Contains(string(ev.Data), `"message":"hi"`) {
				t.Errorf("%s: %s: got %+v, want the echo of its args", doc, m[0], ev)
			}
		}
	}
	if found < 2 {
		t.Fatalf("found %d nats req commands in the docs; the pattern no longer matches them", found)
	}
	ev := natsRequest(t, f, "toolmesh.call.echo", `{"message":"hi"}`)
	p := ev.Problem()
	if p == nil || p.Code != envelope.CodeInvalidInput || p.SuggestedFix == nil ||
		!strings.Contains(p.SuggestedFix.Description, `'{"args":{…}}'`) || strings.Contains(p.SuggestedFix.Description, "violations") {
		t.Fatalf("a bare args object: %+v (fix %+v), want invalid_input whose fix shows {\"args\":…}", p, p.SuggestedFix)
	}
}

// natsRequest sends body to subject as `nats req` does (its own inbox, no
// metadata line) and returns the terminal event.
func natsRequest(t *testing.T, f *meshFixture, subject, body string) envelope.ToolEvent {
	t.Helper()
	msg, err := f.cnc.Request(subject, []byte(body), 10*time.Second)
	if err != nil {
		t.Fatalf("nats req %s %s: %v", subject, body, err)
	}
	evs := replyEvents(t, msg)
	if len(evs) != 1 || !evs[0].IsTerminal() {
		t.Fatalf("nats req %s %s: %q, want one terminal event", subject, body, msg.Data)
	}
	return evs[0]
}
