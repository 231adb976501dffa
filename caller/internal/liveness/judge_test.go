package liveness

import (
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// newJudge is a Judge with a 1s heartbeat, a 10s pickup timeout and a
// 1.5s pickup cutoff, over empty tables.
func newJudge() *Judge {
	return &Judge{Heartbeat: time.Second, PickupTimeout: 10 * time.Second, PickupCutoff: 1500 * time.Millisecond,
		Probes: NewProbes(), Presence: NewPresence(), Known: lookupIn(nil), Fetch: func(map[string][]string) {}}
}

// A call whose worker spoke is judged by the worker's silence: nothing
// within MissedBeats of its interval, a probe past it, worker_lost (ran
// "maybe") once the worker is known gone or after SilentBeats intervals.
func TestJudgeSpoken(t *testing.T) {
	now := time.Now()
	beat := time.Second
	for _, tc := range []struct {
		name      string
		call      Call
		gone      bool
		wantCode  envelope.Code
		wantProbe bool
	}{
		{"heard lately", Call{WorkerID: "W", Spoken: true, Last: now.Add(-2 * beat)}, false, "", false},
		{"silent past its limit", Call{WorkerID: "W", Spoken: true, Last: now.Add(-4 * beat)}, false, "", true},
		{"judged by its own longer interval", Call{WorkerID: "W", Spoken: true, Interval: 2 * beat, Last: now.Add(-5 * beat)}, false, "", false},
		{"silent, worker unknown", Call{Spoken: true, Last: now.Add(-4 * beat)}, false, envelope.CodeWorkerLost, false},
		{"silent, worker gone", Call{WorkerID: "W", Spoken: true, Last: now.Add(-4 * beat)}, true, envelope.CodeWorkerLost, false},
		{"silent for SilentBeats", Call{WorkerID: "W", Spoken: true, Last: now.Add(-(SilentBeats + 1) * beat)}, false, envelope.CodeWorkerLost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJudge()
			if tc.gone {
				tok := j.Probes.Next("W", now, beat)
				if _, ok := j.Probes.Gone(tok); !ok {
					t.Fatal("the probe's 503 was not taken")
				}
			}
			prob, probe := j.Fate(now, tc.call, false)
			if code := codeOf(prob); code != tc.wantCode || probe != tc.wantProbe {
				t.Fatalf("Fate = %q, probe %v; want %q, probe %v", code, probe, tc.wantCode, tc.wantProbe)
			}
			if prob != nil && prob.Ran() != envelope.RanMaybe {
				t.Errorf("ran = %q, want maybe: the worker took the call up", prob.Ran())
			}
		})
	}
}

// A call no worker named waits out its cutoff and SettleMargin (longer
// while the inbox has a backlog); then it is worker_lost when a host of
// its tool is gone or none was heard past the pickup timeout, and
// overloaded when its hosts live but have not read it for SilentBeats.
// Its Problem has no "ran" yet: settling gives it one.
func TestJudgeUnpicked(t *testing.T) {
	now := time.Now()
	beat := time.Second
	for _, tc := range []struct {
		name     string
		quiet    time.Duration // since the call was sent
		host     string        // heard on the tool just now ("" none)
		gone     bool          // the host's probe came back 503
		backlog  bool
		due      bool
		wantCode envelope.Code
	}{
		{"within its cutoff and margin", 2 * beat, "", false, false, false, ""},
		{"a host of the tool is gone", 4 * beat, "H", true, false, false, envelope.CodeWorkerLost},
		{"already due", 4 * beat, "H", true, false, true, ""},
		{"a backlog may hold its heartbeat", 4 * beat, "H", true, true, false, ""},
		{"no host heard, within the pickup timeout", 4 * beat, "", false, false, false, ""},
		{"no host heard, past the pickup timeout", 12 * beat, "", false, false, false, envelope.CodeWorkerLost},
		{"hosts alive, not yet SilentBeats", 12 * beat, "H", false, false, false, ""},
		{"hosts alive, SilentBeats past", (SilentBeats + 1) * beat, "H", false, false, false, envelope.CodeOverloaded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJudge()
			if tc.host != "" {
				j.Probes.Hosts("t.a", tc.host, now)
				if tc.gone {
					_, _ = j.Probes.Gone(j.Probes.Next(tc.host, now, beat))
				}
			}
			sent := now.Add(-tc.quiet)
			call := Call{Tool: "t.a", Last: sent, Pickup: sent.Add(j.PickupCutoff), Due: tc.due}
			prob, probe := j.Fate(now, call, tc.backlog)
			if code := codeOf(prob); code != tc.wantCode || probe {
				t.Fatalf("Fate = %q, probe %v; want %q, no probe", code, probe, tc.wantCode)
			}
			if prob != nil && prob.Ran() != "" {
				t.Errorf("ran = %q before settling", prob.Ran())
			}
		})
	}
}

// A call that accepted "maybe" says so when it is settled, and its
// detail says why repeating it is safe.
func TestJudgeUnnamedMaybe(t *testing.T) {
	now := time.Now()
	j := newJudge()
	sent := now.Add(-12 * time.Second)
	for _, maybe := range []bool{false, true} {
		prob, _ := j.Fate(now, Call{Tool: "t.a", Last: sent, Pickup: sent.Add(j.PickupCutoff), Maybe: maybe}, false)
		if prob == nil {
			t.Fatal("a call unnamed past its pickup timeout was not judged")
		}
		want, safe := envelope.RanNo, "did not run"
		if maybe {
			want, safe = envelope.RanMaybe, "repeating it is safe"
		}
		if got := Unnamed(prob, maybe); got.Ran() != want || !strings.Contains(got.Detail, safe) {
			t.Errorf("maybe=%v: settled ran %q, detail %q; want %q, %q", maybe, got.Ran(), got.Detail, want, safe)
		}
	}
}

// A marker settles a call only when it was sent SettleMargin after the
// call's cutoff, and the connection has not come back since the call
// was sent; a due call not settled within MarkerPatience may have run.
func TestSettles(t *testing.T) {
	j := newJudge()
	pickup := time.Now()
	never := time.Unix(0, 0)
	if j.Settles(pickup.Add(j.SettleMargin()-time.Millisecond), pickup, never) {
		t.Error("a marker sent within the margin settled the call")
	}
	if !j.Settles(pickup.Add(j.SettleMargin()), pickup, never) {
		t.Error("a marker sent past the margin did not settle the call")
	}
	if j.Settles(pickup.Add(time.Minute), pickup, pickup) {
		t.Error("a marker settled a call sent before the connection came back")
	}
	if got, want := j.MarkerPatience(false), wire.MissedBeats*j.Heartbeat; got != want {
		t.Errorf("MarkerPatience = %v, want %v", got, want)
	}
	if got, want := j.MarkerPatience(true), SilentBeats*j.Heartbeat; got != want {
		t.Errorf("MarkerPatience with a backlog = %v, want %v", got, want)
	}
	prob := problembase.Registry{}.New(envelope.CodeWorkerLost, "lost")
	if got := Unconfirmed(*prob); got.Ran() != envelope.RanMaybe || !strings.HasPrefix(got.Detail, "lost; ") || prob.Detail != "lost" {
		t.Errorf("Unconfirmed = ran %q, %q (held %q): want maybe, the detail extended, the held Problem kept", got.Ran(), got.Detail, prob.Detail)
	}
}

func codeOf(p *envelope.Problem) envelope.Code {
	if p == nil {
		return ""
	}
	return p.Code
}
