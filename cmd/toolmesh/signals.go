package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// drainContext bounds a graceful shutdown: it ends when timeout passes or
// when a second interrupt (or SIGTERM) arrives, so a user who presses
// Ctrl-C again during a drain is not kept waiting. cancel releases the
// signal handler.
func drainContext(timeout time.Duration, log *slog.Logger) (ctx context.Context, interrupted func() bool, cancel func()) {
	ctx, stop := context.WithTimeout(context.Background(), timeout)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	hit := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("second signal: cancelling the calls in flight and stopping now", "signal", sig.String())
			close(hit)
			stop()
		case <-done:
		}
	}()
	interrupted = func() bool {
		select {
		case <-hit:
			return true
		default:
			return false
		}
	}
	return ctx, interrupted, func() {
		signal.Stop(sigs)
		close(done)
		stop()
	}
}

// readStdin reads all of r unless ctx ends first (a signal while the
// writer keeps the pipe open): the read is abandoned, not waited for.
func readStdin(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
