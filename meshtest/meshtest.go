package meshtest

import (
	"cmp"
	"context"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh"
	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// Config adjusts what New starts; the zero value is usable. It is
// toolmesh.MeshConfig: Server configures the embedded server, Worker and
// Caller the two ends; the test kit's own defaults are NewWith's.
type Config = toolmesh.MeshConfig

// Mesh is a running test mesh: a toolmesh.Mesh, whose Server, Worker
// (on its own connection) and Caller (on another) it carries, with the
// test kit's Close and Connect.
type Mesh struct {
	*toolmesh.Mesh
}

// New starts a mesh for t with the default configuration.
func New(t testing.TB) *Mesh { return NewWith(t, Config{}) }

// NewWith starts a mesh for t as cfg says. The worker and the caller log
// to t's output (see Logger) unless cfg names loggers, and JetStream
// stores under t.TempDir. Anything that fails to start fails t at once;
// everything is stopped by t.Cleanup.
func NewWith(t testing.TB, cfg Config) *Mesh {
	t.Helper()
	if cfg.Worker.Logger == nil || cfg.Caller.Logger == nil {
		log := Logger(t)
		cfg.Worker.Logger = cmp.Or(cfg.Worker.Logger, log)
		cfg.Caller.Logger = cmp.Or(cfg.Caller.Logger, log)
	}
	storeInTemp(t, &cfg.Server)
	m, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// Start starts a mesh without a test: for examples, benchmarks harnesses
// and programs (toolmesh.StartMesh is the same without the test kit).
// Unset loggers discard. Close stops it.
func Start(cfg Config) (*Mesh, error) {
	quietIfUnset(&cfg.Worker.Logger)
	quietIfUnset(&cfg.Caller.Logger)
	em, err := toolmesh.StartMesh(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return &Mesh{em}, nil
}

// Close stops the worker, closes the caller and the connections, and
// shuts the server down.
func (m *Mesh) Close() { _ = m.Mesh.Close(context.Background()) }

// Connect opens one more connection to the mesh's server, closed when t
// ends: for a second worker or caller, or for raw NATS.
func (m *Mesh) Connect(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return Connect(t, m.Server, opts...)
}

// StartServer starts an embedded nats-server, shut down when t ends; its
// JetStream store, unless cfg names one, is under t.TempDir.
func StartServer(t testing.TB, cfg embedded.Config) *embedded.Server {
	t.Helper()
	storeInTemp(t, &cfg)
	s, err := embedded.Start(context.Background(), cfg)
	return stopAtEnd(t, s, err, func(s *embedded.Server) { _ = s.Shutdown(context.Background()) })
}

// Connect connects to s, closing the connection when t ends.
func Connect(t testing.TB, s *embedded.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := s.Connect(opts...)
	return stopAtEnd(t, nc, err, (*nats.Conn).Close)
}

// NewWorker starts a worker on nc, stopped when t ends; it logs to t's
// output unless cfg names a logger.
func NewWorker(t testing.TB, nc *nats.Conn, cfg worker.Config) *worker.Worker {
	t.Helper()
	testLoggerIfUnset(t, &cfg.Logger)
	w, err := worker.New(nc, cfg)
	return stopAtEnd(t, w, err, (*worker.Worker).Stop)
}

// NewCaller starts a caller on nc, closed when t ends; it logs to t's
// output unless cfg names a logger.
func NewCaller(t testing.TB, nc *nats.Conn, cfg caller.Config) *caller.Caller {
	t.Helper()
	testLoggerIfUnset(t, &cfg.Logger)
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

// testLoggerIfUnset makes an unset logger log to t's output (Logger).
func testLoggerIfUnset(t testing.TB, l **slog.Logger) {
	if *l == nil {
		*l = Logger(t)
	}
}

// quietIfUnset makes an unset logger Quiet.
func quietIfUnset(l **slog.Logger) {
	if *l == nil {
		*l = Quiet()
	}
}

// Quiet is a logger that discards everything, for the noise of tests.
func Quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// storeInTemp puts a JetStream store the config leaves unnamed under
// t.TempDir, which the testing package removes.
func storeInTemp(t testing.TB, cfg *embedded.Config) {
	if !cfg.NoJetStream && cfg.StoreDir == "" {
		cfg.StoreDir = t.TempDir()
	}
}
