package bench

import (
	"context"
	"strings"
	"testing"
)

// The memory row's processes get the server's URL and every secret given
// as a flag through their environment: none of it is in their argv, which
// any user can read.
func TestPeerSecretsStayOutOfArgv(t *testing.T) {
	benchEnv := &Env{NKey: "/keys/seed.nk"}
	benchEnv.Connect.User, benchEnv.Connect.Password, benchEnv.Connect.Token = "alice", "s3cret-pw", "s3cret-token"
	url := "nats://alice:s3cret-pw@127.0.0.1:4222"
	cmd, err := peerCommand(context.Background(), benchEnv, &benchOptions{memoryCalls: 7}, url, "tm-bench", peerWorker, modeMesh)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(cmd.Args, " ")
	for _, secret := range []string{"s3cret-pw", "s3cret-token", "alice"} {
		if strings.Contains(argv, secret) {
			t.Errorf("argv %q carries %q", argv, secret)
		}
	}
	if !strings.Contains(argv, "--nkey /keys/seed.nk") || !strings.Contains(argv, "--memory-calls 7") {
		t.Errorf("argv %q lacks the nkey file or the count", argv)
	}
	env := strings.Join(cmd.Env, "\n")
	for _, want := range []string{"NATS_URL=" + url, "NATS_USER=alice", "NATS_PASSWORD=s3cret-pw", "NATS_TOKEN=s3cret-token"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %s", want)
		}
	}
}
