package wire

import (
	"testing"

	"github.com/nats-io/nats.go"
)

func TestIdentity(t *testing.T) {
	stamp := `{"acc":"ALICE","user":"alice","rtt":123}`
	for _, c := range []struct {
		name string
		h    nats.Header
		want string
	}{
		{"none", nats.Header{}, ""},
		{"stamped", nats.Header{HeaderRequestInfo: {stamp}}, "ALICE/alice"},
		{"server's value is last", nats.Header{HeaderRequestInfo: {`{"acc":"BOB","user":"bob"}`, stamp}}, "ALICE/alice"},
		{"other spellings are not identity", nats.Header{"nats-request-info": {stamp}}, ""},
		{"unreadable", nats.Header{HeaderRequestInfo: {"{"}}, "?"},
	} {
		if got := Identity(c.h); got != c.want {
			t.Errorf("%s: Identity = %q, want %q", c.name, got, c.want)
		}
	}
}
