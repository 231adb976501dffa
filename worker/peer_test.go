package worker

import (
	"testing"
	"time"
)

// The peer's beats ride on the call it received last (§8.1); when that
// call ends, on the next most recent, not on whichever the map yields.
func TestMostRecent(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	calls := make([]*call, 5)
	for i := range calls {
		calls[i] = &call{key: callKey{id: string(rune('a' + i))}, started: t0.Add(time.Duration(i) * time.Millisecond)}
	}
	cases := []struct {
		name string
		held []int
		want int // index into calls, -1 for none
	}{
		{"none", nil, -1},
		{"one", []int{2}, 2},
		{"the newest of several", []int{0, 3, 1}, 3},
		{"the newest after the last one ended", []int{0, 1, 2, 3}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Many draws: a map's order changes from one range to the next.
			for range 50 {
				held := map[*call]struct{}{}
				for _, i := range tc.held {
					held[calls[i]] = struct{}{}
				}
				got := mostRecent(held)
				if (tc.want < 0 && got != nil) || (tc.want >= 0 && got != calls[tc.want]) {
					t.Fatalf("mostRecent of %v = %v, want call %d", tc.held, got, tc.want)
				}
			}
		})
	}
}
