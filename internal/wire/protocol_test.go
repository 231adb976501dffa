package wire

import (
	"math"
	"testing"
	"time"
)

func TestMillisSaturates(t *testing.T) {
	cases := []struct {
		ms   int64
		want time.Duration
	}{
		{0, 0},
		{1500, 1500 * time.Millisecond},
		{-5, -5 * time.Millisecond},
		{9999999999999, time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond},
		{math.MaxInt64, time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond},
	}
	for _, c := range cases {
		if got := Millis(c.ms); got != c.want {
			t.Errorf("Millis(%d) = %v, want %v", c.ms, got, c.want)
		}
	}
}
