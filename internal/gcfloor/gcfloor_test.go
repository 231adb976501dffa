package gcfloor_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/toolmesh/toolmesh/internal/gcfloor"
	"github.com/toolmesh/toolmesh/internal/testutil"
)

func TestPercent(t *testing.T) {
	cases := []struct {
		name                 string
		floor, live, scanned uint64
		base, want           int
	}{
		{"before the first collection: unchanged", 32 << 20, 0, 0, 100, 100},
		{"a small live heap: the goal is the floor", 32 << 20, 5 << 20, 5 << 20, 100, 540},
		{"stacks and globals count towards the goal", 32 << 20, 5 << 20, 9 << 20, 100, 300},
		{"live heap above the floor: Go's own goal", 32 << 20, 40 << 20, 41 << 20, 100, 100},
		{"never below the GOGC the process started with", 32 << 20, 16 << 20, 16 << 20, 300, 300},
		{"a tiny live heap: the runtime's minimum goal, scaled, is the floor", 32 << 20, 1 << 20, 2 << 20, 100, 800},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcfloor.Percent(tc.floor, tc.live, tc.scanned, tc.base); got != tc.want {
				t.Errorf("Percent(%d, %d, %d, %d) = %d, want %d", tc.floor, tc.live, tc.scanned, tc.base, got, tc.want)
			}
		})
	}
}

// read returns a runtime metric's value.
func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestFloorFollowsTheLiveHeap: with a floor of 64 MiB the heap goal
// reaches the floor after a collection and stays there as the live heap
// changes (the floor re-tunes after every cycle), and Stop puts GOGC back.
func TestFloorFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "") // Start reads the variable: unset for this test
	const floor = 64 << 20
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	f := gcfloor.Start(floor)
	if f == nil {
		t.Fatal("Start returned nil with GOGC unset and collection on")
	}
	runtime.GC()
	near := func() bool { g := read("/gc/heap/goal:bytes"); return g >= floor*9/10 && g <= floor*11/10 }
	testutil.WaitFor(t, "the heap goal to reach the floor", near)
	ballast := make([]byte, 16<<20) // a larger live heap: a lower GOGC gives the same goal
	runtime.GC()
	testutil.WaitFor(t, "GOGC to follow the live heap", func() bool {
		p := read("/gc/gogc:percent")
		return p > 100 && p < 400 && near()
	})
	runtime.KeepAlive(ballast)
	f.Stop()
	if got := read("/gc/gogc:percent"); got != uint64(before) {
		t.Errorf("after Stop GOGC is %d, want %d as before", got, before)
	}
}

// TestStartChangesNothing: no floor, or GOGC set by the operator, leaves
// the collector as it is.
func TestStartChangesNothing(t *testing.T) {
	cases := []struct {
		name  string
		gogc  string
		bytes uint64
	}{
		{"no floor", "", 0},
		{"GOGC set", "150", 64 << 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			before := read("/gc/gogc:percent")
			f := gcfloor.Start(tc.bytes)
			if f != nil {
				t.Errorf("Start(%d) with GOGC=%q made a floor", tc.bytes, tc.gogc)
			}
			f.Stop()
			if got := read("/gc/gogc:percent"); got != before {
				t.Errorf("GOGC changed from %d to %d", before, got)
			}
		})
	}
}
