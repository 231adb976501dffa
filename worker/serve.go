package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// ServeConfig says how Serve ends; the zero value is usable.
type ServeConfig struct {
	// Drain drains the worker, and whatever drains with it, once ctx ends
	// (default: Drain bounded by 30s).
	Drain func() error
	// Stop stops whatever runs beside the worker when no drain is
	// possible: the connection is down or closed for good (default: nothing).
	Stop func()
}

// Serve is the life of a worker process: it serves until ctx ends, then
// drains, or until the NATS connection closes for good. A worker with no
// connection serves nobody, so Serve then stops it and returns a
// connection_lost Problem with the reason, for the process to exit
// non-zero and its supervisor to restart it. When ctx ends during an
// outage it stops at once: a drain needs the server and could only wait
// out its timeout, and nothing in flight can answer anyway.
func (w *Worker) Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.Drain == nil {
		cfg.Drain = func() error {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return w.Drain(dctx)
		}
	}
	stop := func() {
		w.Stop()
		if cfg.Stop != nil {
			cfg.Stop()
		}
	}
	closed := w.nc.StatusChanged(nats.CLOSED)
	defer w.nc.RemoveStatusListener(closed)
	if w.nc.IsClosed() {
		stop()
		return w.connectionClosed()
	}
	select {
	case <-ctx.Done():
		if !w.nc.IsConnected() {
			w.log.Warn("stopping without a drain: the NATS connection is down")
			stop()
			return nil
		}
		return cfg.Drain()
	case <-closed:
		stop()
		return w.connectionClosed()
	}
}

// connectionClosed is the Problem of a connection closed for good.
func (w *Worker) connectionClosed() error {
	reason := "no reason given"
	if err := w.nc.LastError(); err != nil {
		reason = err.Error()
	}
	return w.problems.New(envelope.CodeConnectionLost, "the NATS connection closed for good ("+reason+"); the worker cannot serve and exits").
		WithFix("Check that the NATS server is reachable; raise the connection's reconnect limit (--max-reconnects; 0 never gives up), or let a supervisor restart the worker.", envelope.MaybeIncorrect)
}
