package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

func TestServeDrainsWhenContextEnds(t *testing.T) {
	w, _ := newTestWorker(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- w.Serve(ctx, ServeConfig{Drain: func() error { close(drained); return nil }})
	}()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	select {
	case <-drained:
	default:
		t.Fatal("Serve returned without draining")
	}
}

func TestServeEndsWhenConnectionCloses(t *testing.T) {
	w, _ := newTestWorker(t, Config{})
	stopped := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- w.Serve(context.Background(), ServeConfig{Stop: func() { close(stopped) }})
	}()
	w.nc.Close()
	err := <-done
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeConnectionLost {
		t.Fatalf("Serve: %v, want connection_lost", err)
	}
	<-stopped
	if err := w.Register(envelope.ToolSpec{Name: "late"}, noop); !errors.Is(err, errDraining) {
		t.Errorf("the worker still registers tools after Serve stopped it: %v", err)
	}
}
