// Package meshtest starts a whole toolmesh inside a test, the way
// net/http/httptest starts an HTTP server: an embedded nats-server (no
// port, in-process connections), a worker and a caller, all stopped when
// the test ends.
//
//	m := meshtest.New(t)
//	worker.AddTool(m.Worker, worker.ToolSpec{Name: "add"}, add)
//	sum, err := caller.CallAs[int](ctx, m.Caller, "add", Pair{1, 2})
package meshtest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// Config adjusts what New starts; the zero value is usable.
type Config struct {
	// Server configures the embedded server (default: in-process only).
	Server embedded.Config
	// Worker and Caller configure the two ends (default loggers discard).
	Worker worker.Config
	Caller caller.Config
}

// Mesh is a running test mesh.
type Mesh struct {
	// Server is the embedded nats-server.
	Server *embedded.Server
	// Worker hosts tools on its own connection; Caller calls them on another.
	Worker *worker.Worker
	Caller *caller.Caller

	conns [2]*nats.Conn
}

// New starts a mesh for t with the default configuration.
func New(t testing.TB) *Mesh { return NewWith(t, Config{}) }

// NewWith starts a mesh for t as cfg says. Anything that fails to start
// fails t at once; everything is stopped by t.Cleanup.
func NewWith(t testing.TB, cfg Config) *Mesh {
	t.Helper()
	m, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// Start starts a mesh without a test: for examples, benchmarks harnesses
// and programs. Close stops it.
func Start(cfg Config) (*Mesh, error) {
	if cfg.Server.Listen == "" {
		cfg.Server.InProcessOnly = true
	}
	quietIfUnset(&cfg.Worker.Logger)
	quietIfUnset(&cfg.Caller.Logger)
	s, err := embedded.Start(context.Background(), cfg.Server)
	if err != nil {
		return nil, err
	}
	m := &Mesh{Server: s}
	if err := m.startEnds(cfg); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// startEnds connects the worker and the caller, each on its own connection.
func (m *Mesh) startEnds(cfg Config) error {
	var err error
	if m.conns[0], err = m.Server.Connect(); err != nil {
		return err
	}
	if m.conns[1], err = m.Server.Connect(); err != nil {
		return err
	}
	if m.Worker, err = worker.New(m.conns[0], cfg.Worker); err != nil {
		return err
	}
	m.Caller, err = caller.New(m.conns[1], cfg.Caller)
	return err
}

// Close stops the worker, closes the caller and the connections, and
// shuts the server down.
func (m *Mesh) Close() {
	if m.Worker != nil {
		m.Worker.Stop()
	}
	if m.Caller != nil {
		_ = m.Caller.Close()
	}
	for _, nc := range m.conns {
		if nc != nil {
			nc.Close()
		}
	}
	_ = m.Server.Shutdown(context.Background())
}

// Connect opens one more connection to the mesh's server, closed when t
// ends: for a second worker or caller, or for raw NATS.
func (m *Mesh) Connect(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return Connect(t, m.Server, opts...)
}

// StartServer starts an embedded nats-server, shut down when t ends.
func StartServer(t testing.TB, cfg embedded.Config) *embedded.Server {
	t.Helper()
	s, err := embedded.Start(context.Background(), cfg)
	return stopAtEnd(t, s, err, func(s *embedded.Server) { _ = s.Shutdown(context.Background()) })
}

// Connect connects to s, closing the connection when t ends.
func Connect(t testing.TB, s *embedded.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := s.Connect(opts...)
	return stopAtEnd(t, nc, err, (*nats.Conn).Close)
}

// NewWorker starts a worker on nc, stopped when t ends; its logs are
// discarded unless cfg names a logger.
func NewWorker(t testing.TB, nc *nats.Conn, cfg worker.Config) *worker.Worker {
	t.Helper()
	quietIfUnset(&cfg.Logger)
	w, err := worker.New(nc, cfg)
	return stopAtEnd(t, w, err, (*worker.Worker).Stop)
}

// NewCaller starts a caller on nc, closed when t ends; its logs are
// discarded unless cfg names a logger.
func NewCaller(t testing.TB, nc *nats.Conn, cfg caller.Config) *caller.Caller {
	t.Helper()
	quietIfUnset(&cfg.Logger)
	c, err := caller.New(nc, cfg)
	return stopAtEnd(t, c, err, func(c *caller.Caller) { _ = c.Close() })
}

// stopAtEnd fails t when something did not start, and otherwise stops it
// when t ends.
func stopAtEnd[T any](t testing.TB, v T, err error, stop func(T)) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(v) })
	return v
}

// quietIfUnset makes an unset logger Quiet.
func quietIfUnset(l **slog.Logger) {
	if *l == nil {
		*l = Quiet()
	}
}

// Quiet is a logger that discards everything, for the noise of tests.
func Quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }
