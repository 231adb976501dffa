package tests

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// What the worker's sender probe (docs/protocol.md §8.5) relies on, on the
// stock nats-server as its own process: in one account, a probe beside a
// gone requester's reply subject is answered 503, and one beside a live
// requester's is delivered to its request mux and answered nothing.
// Across accounts (deploy/secure) the server answers nothing either way:
// the exporting account publishes to a `_R_.` reply it forgot, or to one
// whose requester is still there, alike — which is why an unleased call
// from another account does not wait for room. Each probe is followed by
// a marker the server always answers 503 on the same subscription, so
// "no answer" is read in order, not after a timeout.
func TestStockServerAnswersSenderProbesOnlyInOneAccount(t *testing.T) {
	t.Run("one account", func(t *testing.T) {
		s := startStockServer(t)
		worker, requester := dialURL(t, s.url), dialURL(t, s.url)
		answers := probeAnswers(t, worker, "probe.answers.*")
		const base, beside, marker = "probe.answers.", "_INBOX.req.tm-sender-probe", "nobody.holds.this"
		if _, err := requester.Subscribe("_INBOX.req.*", func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		if err := requester.Flush(); err != nil {
			t.Fatal(err)
		}
		if probe(t, worker, answers, base, beside, marker) {
			t.Fatal("a probe beside a live requester's reply was answered 503")
		}
		requester.Close()
		waitFor(t, "a probe beside the gone requester's reply answered 503", func() bool {
			return probe(t, worker, answers, base, beside, marker)
		})
	})
	t.Run("across accounts", func(t *testing.T) {
		m := startSecureStockMonitored(t)
		worker := m.dial(t, "tools")
		// The server holds the subscription before bob calls: his call is
		// not dropped unheard, and the receive below does not wait forever.
		calls := subscribed(t, worker, "toolmesh.call.demo.probe", 1)
		const base = "toolmesh.ctl.demo.w.sender."
		answers := probeAnswers(t, worker, base+"*")
		bob := m.dial(t, "bob")
		if _, err := bob.Subscribe("_INBOX.bob.*", func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		if err := bob.PublishRequest("toolmesh.call.demo.probe", "_INBOX.bob.1", []byte(`{"args":{}}`)); err != nil {
			t.Fatal(err)
		}
		reply := (<-calls).Reply
		if !strings.HasPrefix(reply, "_R_.") {
			t.Fatalf("reply subject %q is not one the server made", reply)
		}
		// The marker: a publish the tools user may make that nobody holds.
		const marker = "toolmesh.audit.demo.nobody"
		if probe(t, worker, answers, base, reply, marker) {
			t.Fatal("a probe to a live requester's reply was answered 503")
		}
		if n := m.connections(t, "BOB"); n != 1 {
			t.Fatalf("the server reports %d connections of account BOB, want bob's", n)
		}
		bob.Close()
		waitFor(t, "the server to drop bob's connection", func() bool { return m.connections(t, "BOB") == 0 })
		if probe(t, worker, answers, base, reply, marker) {
			t.Fatal("across accounts the server now answers a gone requester's probe 503: the worker could let such calls wait and check them (docs/protocol.md §8.5)")
		}
	})
}

func probeAnswers(t *testing.T, nc *nats.Conn, subject string) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 16)
	if _, err := nc.ChanSubscribe(subject, ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

// probe publishes to subject with a reply under answerBase, then a
// marker nobody holds, and reports whether the server answered the probe
// 503 before it answered the marker.
func probe(t *testing.T, nc *nats.Conn, answers chan *nats.Msg, answerBase, subject, marker string) bool {
	t.Helper()
	for _, m := range []*nats.Msg{{Subject: subject, Reply: answerBase + "p"}, {Subject: marker, Reply: answerBase + "m"}} {
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	gone := false
	for m := range answers {
		if strings.HasSuffix(m.Subject, ".m") {
			return gone
		}
		gone = gone || m.Header.Get("Status") == "503"
	}
	return gone
}

// monitoredSecureStock is deploy/secure on the stock server with its
// monitoring port open, to read who is connected.
type monitoredSecureStock struct {
	*secureStock
	monitor string
}

var monitorURL = regexp.MustCompile(`"http://[^"]+"`)

func startSecureStockMonitored(t *testing.T) *monitoredSecureStock {
	t.Helper()
	m, s := startSecureStockWith(t, "-m", "-1")
	var mon string
	waitFor(t, "the monitoring port in the ports file", func() bool {
		for _, f := range s.portsFiles() {
			if b, err := os.ReadFile(f); err == nil {
				mon = strings.Trim(string(monitorURL.Find(b)), `"`)
			}
		}
		return mon != ""
	})
	return &monitoredSecureStock{m, mon}
}

// connections is how many clients of account acc the server holds.
func (m *monitoredSecureStock) connections(t *testing.T, acc string) int {
	t.Helper()
	resp, err := http.Get(m.monitor + "/connz?acc=" + acc)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var connz struct {
		NumConnections int `json:"num_connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&connz); err != nil {
		t.Fatal(err)
	}
	return connz.NumConnections
}
