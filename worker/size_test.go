package worker

import (
	"math"
	"testing"
	"time"
	"unsafe"
)

// TestCallStaysSmall guards the worker's memory per blocked call (issue
// 26: at most 6 KiB with the handler's goroutine): a call fits the
// 512-byte size class. A field added to call costs the next class (576
// bytes) unless another goes.
func TestCallStaysSmall(t *testing.T) {
	if got := unsafe.Sizeof(call{}); got > 512 {
		t.Errorf("call is %d bytes, more than the 512 of its size class", got)
	}
}

// TestPickupNanos checks the cutoff a call keeps: none stays none, one at
// or before 1970 is always past, and one beyond int64 nanoseconds is
// never past instead of wrapping into the past.
func TestPickupNanos(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Time
		want int64
	}{
		{"none", time.Time{}, 0},
		{"epoch", time.UnixMilli(0), 1},
		{"before 1970", time.UnixMilli(-5), 1},
		{"ordinary", time.UnixMilli(1_700_000_000_123), 1_700_000_000_123_000_000},
		{"beyond int64 ns", time.UnixMilli(maxUnixMilli), math.MaxInt64},
	} {
		if got := pickupNanos(tc.in); got != tc.want {
			t.Errorf("%s: pickupNanos = %d, want %d", tc.name, got, tc.want)
		}
	}
}
