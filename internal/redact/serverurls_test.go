package redact

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/internal/wire"
)

func TestServerURLs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://alice:s3cret@h:4222", "nats://alice:xxxxx@h:4222"},
		{"nats://TOKEN123@h:4222", "nats://xxxxx@h:4222"},
		{"nats://a:p1@h1:4222, nats://b:p2@h2:4222", "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222"},
		{"nats://a:p%zz@h", "nats://a:xxxxx@h"},
		{"nats://u:pa#ss/w?d@h:1", "nats://u:xxxxx@h:1"},
		{"u:pw@h:1", "u:xxxxx@h:1"},
	} {
		if got := ServerURLs(c.in); got != c.want {
			t.Errorf("ServerURLs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Whatever the URL, ServerURLs never returns its password, and Identity
// never panics on a header.
func FuzzServerURLs(f *testing.F) {
	f.Add("alice", "s3cret-pw", "127.0.0.1:4222")
	f.Add("", "tok/en@x", "h")
	f.Add("a:b", "p@ss:word", "[::1]:4222")
	f.Fuzz(func(t *testing.T, user, pass, host string) {
		_ = wire.Identity(nats.Header{wire.HeaderRequestInfo: {pass}})
		if len(pass) < 6 || strings.Contains(user+host, pass) || strings.ContainsAny(pass, ",") || strings.ContainsAny(host, "@,") {
			return
		}
		in := "nats://" + user + ":" + pass + "@" + host
		if got := ServerURLs(in); strings.Contains(got, pass) {
			t.Fatalf("ServerURLs(%q) = %q", in, got)
		}
	})
}
