package mesh

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://alice:s3cret@h:4222", "nats://alice:xxxxx@h:4222"},
		{"nats://TOKEN123@h:4222", "nats://xxxxx@h:4222"},
		{"nats://a:p1@h1:4222, nats://b:p2@h2:4222", "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222"},
		{"nats://a:p%zz@h", "nats://a:xxxxx@h"},
		{"nats://u:pa#ss/w?d@h:1", "nats://u:xxxxx@h:1"},
		{"u:pw@h:1", "u:xxxxx@h:1"},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestViolationAndDialProblem(t *testing.T) {
	err := fmt.Errorf("%w: %s", nats.ErrPermissionViolation, `Permissions Violation for Subscription to "toolmesh.call.x" using queue "toolmesh"`)
	if op, subj, ok := wire.Violation(err); !ok || op != wire.OpSubscribe || subj != "toolmesh.call.x" {
		t.Errorf("Violation = %s %q %v", op, subj, ok)
	}
	if _, _, ok := wire.Violation(errors.New("something else")); ok {
		t.Error("a plain error read as a violation")
	}
	p := DialProblem("nats://alice:pw123456@h:1", errors.New("nats: Authorization Violation"))
	if p.Code != envelope.CodeUnauthorized || p.Transient() || strings.Contains(p.Detail, "pw123456") {
		t.Errorf("auth failure: %+v", p)
	}
	p = DialProblem("nats://alice:pw123456@h:1", errors.New("dial tcp: connection refused"))
	if p.Code != envelope.CodeConnectionLost || strings.Contains(p.Detail, "pw123456") {
		t.Errorf("unreachable: %+v", p)
	}
}

// Whatever the URL, RedactURL never returns its password, and Identity
// never panics on a header.
func FuzzRedactURL(f *testing.F) {
	f.Add("alice", "s3cret-pw", "127.0.0.1:4222")
	f.Add("", "tok/en@x", "h")
	f.Add("a:b", "p@ss:word", "[::1]:4222")
	f.Fuzz(func(t *testing.T, user, pass, host string) {
		_ = wire.Identity(nats.Header{wire.HeaderRequestInfo: {pass}})
		if len(pass) < 6 || strings.Contains(user+host, pass) || strings.ContainsAny(pass, ",") || strings.ContainsAny(host, "@,") {
			return
		}
		in := "nats://" + user + ":" + pass + "@" + host
		if got := RedactURL(in); strings.Contains(got, pass) {
			t.Fatalf("RedactURL(%q) = %q", in, got)
		}
	})
}
