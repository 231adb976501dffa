package main

import (
	"testing"

	"github.com/toolmesh/toolmesh/mesh"
)

// Flags win over the environment; the environment fills what flags left
// empty, each variable on its own (a --user with $NATS_PASSWORD is the
// usual way to keep the password out of argv).
func TestCredentialsFromEnv(t *testing.T) {
	env := map[string]string{"NATS_USER": "env-user", "NATS_PASSWORD": "env-pw", "NATS_TOKEN": "env-token",
		"NATS_CREDS": "/env.creds", "NATS_NKEY": "/env.nk"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name      string
		flags     mesh.ConnectOptions
		want      mesh.ConnectOptions
		noEnvWant mesh.ConnectOptions
	}{
		{"nothing given", mesh.ConnectOptions{},
			mesh.ConnectOptions{User: "env-user", Password: "env-pw", Token: "env-token", Creds: "/env.creds", NKeySeed: "/env.nk"},
			mesh.ConnectOptions{}},
		{"flags win", mesh.ConnectOptions{User: "u", Password: "p", Token: "t", Creds: "/c", NKeySeed: "/n"},
			mesh.ConnectOptions{User: "u", Password: "p", Token: "t", Creds: "/c", NKeySeed: "/n"},
			mesh.ConnectOptions{User: "u", Password: "p", Token: "t", Creds: "/c", NKeySeed: "/n"}},
		{"user flag, password from env", mesh.ConnectOptions{User: "u"},
			mesh.ConnectOptions{User: "u", Password: "env-pw", Token: "env-token", Creds: "/env.creds", NKeySeed: "/env.nk"},
			mesh.ConnectOptions{User: "u"}},
	}
	for _, c := range cases {
		if got := credentialsFromEnv(c.flags, getenv); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		if got := credentialsFromEnv(c.flags, func(string) string { return "" }); got != c.noEnvWant {
			t.Errorf("%s without env: got %+v, want %+v", c.name, got, c.noEnvWant)
		}
	}
}

func TestLookupProblem(t *testing.T) {
	cases := []struct {
		arg, want string
	}{
		{"timeout", "timeout"},
		{"stream-gap", "stream_gap"},
		{"https://toolmesh.dev/problems/worker-lost/v1", "worker_lost"},
		{"https://example.org/errs/tool-failed/v1/", "tool_failed"},
		{"https://toolmesh.dev/problems/timeout/v2", ""},
		{"about:blank", ""},
		{"auth_required", ""},
		{"", ""},
	}
	for _, c := range cases {
		info, err := lookupProblem(c.arg)
		if string(info.Code) != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%q: got %q (%v), want %q", c.arg, info.Code, err, c.want)
		}
	}
}

func TestRedactURLs(t *testing.T) {
	cases := map[string]string{
		"nats://127.0.0.1:4222":                         "nats://127.0.0.1:4222",
		"nats://ann:s3cret@h:4222,nats://tok3n@h2:4222": "nats://ann:xxxxx@h:4222,nats://xxxxx@h2:4222",
		"nats://ann:s3cret@h:4222, nats://h3:4222":      "nats://ann:xxxxx@h:4222, nats://h3:4222",
		// A parser would take "#ss/w?d@h:1" for a fragment and show it all.
		"nats://u:pa#ss/w?d@h:1": "nats://u:xxxxx@h:1",
	}
	for in, want := range cases {
		if got := redactURLs(in); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}
