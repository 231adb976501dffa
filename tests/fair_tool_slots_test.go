package tests

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// sleepToolYAML is one CLI tool that takes a second a call, two at a time.
const sleepToolYAML = `
tools:
  - name: demo.sleep
    max_concurrent: 2
    binding:
      cli:
        cmd: sleep
        args_template: "1"
        output_format: lines
`

// Under deploy/secure on the stock nats-server as its own process: bob
// sends 5,300 unleased calls of one slow CLI tool and disconnects; the
// same tool still serves alice in her turn, within her 5 s budget —
// behind one of bob's calls, not behind the hundreds the worker admitted
// for him (his worker-wide share). The tool's slots go round robin by
// sender, and bob's calls that find no slot free are refused overloaded,
// unrun.
func TestSecureFloodOfOneToolLeavesItServingOthers(t *testing.T) {
	m := startSecureStock(t)
	w := meshtest.NewWorker(t, m.dial(t, "tools"), worker.Config{Pool: "demo"})
	file, err := cli.Parse([]byte(sleepToolYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.RegisterFile(w, file, meshtest.Quiet()); err != nil {
		t.Fatal(err)
	}

	bob := m.dial(t, "bob")
	var refusedUnrun, refusedOther atomic.Int64
	burst(t, bob, "demo.sleep", noArgs, func(ev envelope.ToolEvent) {
		p := ev.Problem()
		switch {
		case p == nil:
		case p.Code == envelope.CodeOverloaded && p.Ran() == envelope.RanNo:
			refusedUnrun.Add(1)
		default:
			refusedOther.Add(1)
		}
	})
	// The worker admits his share; the tool keeps two running for him and
	// none waiting (a call without caller= from another account does not
	// wait for room: the worker could not see him leave); every other call
	// is refused unrun.
	waitFor(t, "bob's calls past his shares to be refused", func() bool {
		return refusedUnrun.Load() >= bobBurst-512
	})
	bob.Close()

	alice := meshtest.NewCaller(t, m.dial(t, "alice"), caller.Config{})
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := alice.Call(ctx, "demo.sleep", map[string]any{}, caller.WithRetries(caller.NoRetries))
		cancel()
		if err != nil {
			t.Fatalf("alice's call %d of the tool bob flooded: %v", i, err)
		}
	}
	if n := refusedOther.Load(); n != 0 {
		t.Errorf("%d of bob's calls ended otherwise than overloaded, unrun", n)
	}
}

// secureStock is deploy/secure/nats-server.conf, verbatim, loaded by the
// stock nats-server in a process of its own.
type secureStock struct {
	url       string
	passwords map[string]string
}

func startSecureStock(t *testing.T) *secureStock {
	t.Helper()
	m, _ := startSecureStockWith(t)
	return m
}

// startSecureStockWith starts deploy/secure on the stock server with
// extra arguments, and returns it and its process.
func startSecureStockWith(t *testing.T, extra ...string) (*secureStock, *stockServer) {
	t.Helper()
	m := &secureStock{passwords: secureEnv(t)}
	s := startStockServer(t, append([]string{"-c", "../deploy/secure/nats-server.conf"}, extra...)...)
	m.url = s.url
	return m, s
}

// dial connects as user.
func (m *secureStock) dial(t *testing.T, user string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(m.url, nats.UserInfo(user, m.passwords[user]))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}
