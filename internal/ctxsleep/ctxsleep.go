package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends: nil when d has passed, ctx's error
// when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
