package mesh_test

import (
	"context"
	"testing"

	"github.com/toolmesh/toolmesh/mesh"

	"github.com/toolmesh/toolmesh/mesh/embedded"
)

func TestEmbeddedInProcessWithJetStream(t *testing.T) {
	e, err := embedded.Start(context.Background(), embedded.Config{InProcessOnly: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	if e.ClientURL() != "" {
		t.Error("an in-process server has no URL")
	}
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, _ := nc.SubscribeSync("ping")
	_ = nc.Publish("ping", []byte("x"))
	if m, err := sub.NextMsg(5e9); err != nil || string(m.Data) != "x" {
		t.Fatalf("in-process round trip: %v", err)
	}
	if !e.Server.JetStreamEnabled() {
		t.Error("JetStream not enabled")
	}
}

func TestEmbeddedListen(t *testing.T) {
	e, err := embedded.Start(context.Background(), embedded.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	if e.ClientURL() == "" || e.ClientURL() == mesh.DefaultURL {
		t.Errorf("port 0 should pick a free port, got %q", e.ClientURL())
	}
	nc, err := mesh.Connect(context.Background(), mesh.ConnectOptions{URL: e.ClientURL(), Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if _, err := embedded.Start(context.Background(), embedded.Config{Listen: "nonsense"}); err == nil {
		t.Error("a malformed listen address was accepted")
	}
	if _, err := mesh.Connect(context.Background(), mesh.ConnectOptions{TLSCert: "c.pem"}); err == nil {
		t.Error("a TLS cert without its key was accepted")
	}
}
