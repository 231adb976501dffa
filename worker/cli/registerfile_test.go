package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// twoTools is a tools file of "first" (true) and "second" (cmd).
func twoTools(t *testing.T, second string) *File {
	t.Helper()
	f, err := Parse([]byte(fmt.Sprintf(`
tools:
  - name: first
    binding: {cli: {cmd: "true", output_format: lines}}
  - name: second
    binding: {cli: {cmd: %q, output_format: lines}}
`, second)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func names(w *worker.Worker) string {
	var out []string
	for _, s := range w.Specs() {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

// RegisterFile registers every tool of a file or none: a tool that cannot
// be made, or a name already taken, leaves the worker as it was.
func TestRegisterFileAllOrNone(t *testing.T) {
	cases := []struct {
		name    string
		second  string
		already string // a tool registered on the worker beforehand
		wantErr string
		want    string // the worker's tools afterwards
	}{
		{"all", "true", "", "", "first,second"},
		{"a program not on PATH", "no-such-program-toolmesh", "", "no-such-program-toolmesh", ""},
		{"a name already registered", "true", "second", `tool "second" is defined twice`, "second"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := meshtest.New(t)
			if tc.already != "" {
				if err := m.Worker.Register(envelope.ToolSpec{Name: tc.already}, worker.HandlerFunc(nil)); err != nil {
					t.Fatal(err)
				}
			}
			err := RegisterFile(m.Worker, twoTools(t, tc.second), meshtest.Quiet())
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if got := names(m.Worker); got != tc.want {
				t.Errorf("tools after RegisterFile: %q, want %q", got, tc.want)
			}
		})
	}
}

// When the server refuses the second tool's subscription, the first tool,
// already registered, is unregistered again: no half file is served, and
// a call to it finds no responder.
func TestRegisterFileUndoesAServerRefusal(t *testing.T) {
	url := testutil.StartServerWith(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "w", Password: "w", Permissions: &server.Permissions{
			Subscribe: &server.SubjectPermission{Deny: []string{"toolmesh.call.second"}}}}}
	})
	nc, err := nats.Connect(url, nats.UserInfo("w", "w"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w := meshtest.NewWorker(t, nc, worker.Config{})
	err = RegisterFile(w, twoTools(t, "true"), meshtest.Quiet())
	if err == nil || !strings.Contains(err.Error(), "toolmesh.call.second") {
		t.Fatalf("err = %v, want the refused subscription named", err)
	}
	if got := names(w); got != "" {
		t.Fatalf("tools after a refused RegisterFile: %q", got)
	}
	if _, err := nc.Request("toolmesh.call.first", []byte(`{"args":{}}`), 5e9); err != nats.ErrNoResponders {
		t.Fatalf("a call to the unregistered tool: %v, want no responders", err)
	}
}
