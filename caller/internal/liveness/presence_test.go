package liveness

import (
	"reflect"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Which gone worker settles a tool's unnamed calls (protocol §8.2,
// "Finding a dead worker that never spoke"): one whose beacons this
// caller saw and whose spec set holds the tool — learned from a named
// call, or from the spec cache — within its pool's namespace; a set not
// known is fetched from a live worker giving it, and until then settles
// nothing.
func TestPresenceGoneHost(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		beacons   []wire.Beacon // all fresh but the gone worker's, which is G or demo.G
		learned   [2]string     // worker, tool named by it ("" none)
		cached    []string      // tools of spec set "S" in the spec cache
		tool      string
		wantGone  string
		wantFetch map[string][]string
	}{
		{"learned from a twin's named call", []wire.Beacon{{WorkerID: "G", Specs: "S"}, {WorkerID: "L", Specs: "S"}}, [2]string{"L", "t.a"}, nil, "t.a", "G", nil},
		{"from the spec cache", []wire.Beacon{{WorkerID: "G", Specs: "S"}}, [2]string{}, []string{"t.a"}, "t.a", "G", nil},
		{"the set holds other tools", []wire.Beacon{{WorkerID: "G", Specs: "S"}}, [2]string{}, []string{"t.b"}, "t.a", "", nil},
		{"unknown set, fetched from its live twin", []wire.Beacon{{WorkerID: "G", Specs: "S"}, {WorkerID: "L", Specs: "S"}, {WorkerID: "X", Specs: "T"}}, [2]string{}, nil, "t.a", "", map[string][]string{"S": {"L"}}},
		{"unknown set and no twin", []wire.Beacon{{WorkerID: "G", Specs: "S"}, {WorkerID: "X", Specs: "T"}}, [2]string{}, nil, "t.a", "", nil},
		{"outside the pool's namespace", []wire.Beacon{{WorkerID: "demo.G", Specs: "S"}}, [2]string{}, []string{"t.a"}, "t.a", "", nil},
		{"inside the pool's namespace", []wire.Beacon{{WorkerID: "demo.G", Specs: "S"}}, [2]string{}, []string{"demo.a"}, "demo.a", "demo.G", nil},
		{"a goodbye forgets the worker", []wire.Beacon{{WorkerID: "G", Specs: "S"}, {WorkerID: "G", State: wire.BeaconGone}}, [2]string{}, []string{"t.a"}, "t.a", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := map[string][]envelope.ToolSpec{}
			if tc.cached != nil {
				specs := make([]envelope.ToolSpec, len(tc.cached))
				for i, n := range tc.cached {
					specs[i] = envelope.ToolSpec{Name: n}
				}
				cache["S"] = specs
			}
			known := lookupIn(cache)
			pr := NewPresence()
			var gone string
			for _, b := range tc.beacons {
				if b.State == "" {
					b.State = wire.BeaconUp
				}
				pr.Beacon(b, nil, time.Second, now)
				if b.WorkerID == "G" || b.WorkerID == "demo.G" {
					gone = b.WorkerID
				}
			}
			if tc.learned[0] != "" {
				pr.Learn(tc.learned[0], tc.learned[1])
			}
			got, fetch := pr.GoneHost(known, tc.tool, []string{gone}, now)
			if got != tc.wantGone || !reflect.DeepEqual(fetch, tc.wantFetch) {
				t.Fatalf("GoneHost = %q, fetch %v; want %q, %v", got, fetch, tc.wantGone, tc.wantFetch)
			}
			if _, again := pr.GoneHost(known, tc.tool, []string{gone}, now); again != nil {
				t.Errorf("a spec set asked for is asked again at once: %v", again)
			}
		})
	}
}

// A worker is probed once its beacons are more than 1.5 intervals old,
// and only for tools it may host.
func TestPresenceSuspects(t *testing.T) {
	now := time.Now()
	known := lookupIn(map[string][]envelope.ToolSpec{"S": {{Name: "t.a"}}})
	pr := NewPresence()
	pr.Beacon(wire.Beacon{WorkerID: "OLD", State: wire.BeaconUp, Specs: "S"}, nil, time.Second, now.Add(-1600*time.Millisecond))
	pr.Beacon(wire.Beacon{WorkerID: "LATE", State: wire.BeaconUp, Specs: "S"}, nil, time.Second, now.Add(-1400*time.Millisecond))
	pr.Beacon(wire.Beacon{WorkerID: "OTHER", State: wire.BeaconUp, Specs: "U"}, nil, time.Second, now.Add(-5*time.Second))
	for tool, want := range map[string][]string{"t.a": {"OLD", "OTHER"}, "t.b": {"OTHER"}} {
		got := pr.Suspects(known, tool, now)
		if len(got) != len(want) {
			t.Errorf("Suspects(%s) = %v, want %v", tool, got, want)
			continue
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("Suspects(%s) = %v, want %v", tool, got, want)
			}
		}
	}
}

// A beacon equal to the worker's last only moves its last-seen time; any
// other is decoded again.
func TestPresenceRepeat(t *testing.T) {
	now := time.Now()
	pr := NewPresence()
	raw := []byte(`{"worker_id":"W","state":"up","revision":1,"specs":"S"}`)
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"an unknown worker's", raw, false},
		{"the same beacon", raw, true},
		{"a changed beacon", []byte(`{"worker_id":"W","state":"up","revision":2,"specs":"T"}`), false},
	} {
		if got := pr.Repeat("W", tc.data, now.Add(time.Second)); got != tc.want {
			t.Errorf("%s: Repeat = %v, want %v", tc.name, got, tc.want)
		}
		if tc.name == "an unknown worker's" {
			pr.Beacon(wire.Beacon{WorkerID: "W", State: wire.BeaconUp, Revision: 1, Specs: "S"}, raw, time.Second, now)
		}
	}
	if w := pr.workers["W"]; !w.seen.Equal(now.Add(time.Second)) || w.digest != "S" {
		t.Errorf("after a repeat the worker is %+v: want seen moved, spec set kept", w)
	}
}

// lookupIn is a spec lookup over cache, standing in for the spec sets a
// caller's catalogue has seen.
func lookupIn(cache map[string][]envelope.ToolSpec) SpecLookup {
	return func(digest string) ([]envelope.ToolSpec, bool) {
		specs, ok := cache[digest]
		return specs, ok
	}
}
