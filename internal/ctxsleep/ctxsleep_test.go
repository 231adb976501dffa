package ctxsleep

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A wait whose duration passes is nil; one whose context ends first, however
// long its duration, is the context's error.
func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Fatalf("a passed wait: %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v, want context.Canceled", err)
	}
}
