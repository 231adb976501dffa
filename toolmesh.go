package toolmesh

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// MeshConfig configures StartMesh; the zero value is usable.
type MeshConfig struct {
	// Server configures the embedded server (default: in-process only,
	// JetStream on).
	Server embedded.Config
	// Worker and Caller configure the two ends.
	Worker worker.Config
	Caller caller.Config
}

// Mesh is a whole toolmesh in one process: an embedded server, a worker
// and a caller, each end on its own connection.
type Mesh struct {
	// Server is the embedded nats-server.
	Server *embedded.Server
	// Worker hosts tools; Caller calls them.
	Worker *worker.Worker
	Caller *caller.Caller

	conns [2]*nats.Conn
}

// StartMesh starts a server (in-process only unless cfg.Server.Listen
// names an address), a worker and a caller: a complete mesh in one call,
// for programs, examples and demos (package meshtest wraps it for tests).
// Register tools on m.Worker, call them with m.Caller, and Close when done.
func StartMesh(ctx context.Context, cfg MeshConfig) (*Mesh, error) {
	if cfg.Server.Listen == "" {
		cfg.Server.InProcessOnly = true
	}
	s, err := embedded.Start(ctx, cfg.Server)
	if err != nil {
		return nil, err
	}
	m := &Mesh{Server: s}
	if err := m.startEnds(cfg); err != nil {
		return nil, errors.Join(err, m.Close(ctx))
	}
	return m, nil
}

// startEnds connects the worker and the caller, each on its own connection.
func (m *Mesh) startEnds(cfg MeshConfig) error {
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

// Close stops the worker (calls in flight are cancelled; use
// m.Worker.Drain first to let them finish), closes the caller and the
// connections, and shuts the server down, bounded by ctx.
func (m *Mesh) Close(ctx context.Context) error {
	if m.Worker != nil {
		m.Worker.Stop()
	}
	var err error
	if m.Caller != nil {
		err = m.Caller.Close()
	}
	for _, nc := range m.conns {
		if nc != nil {
			nc.Close()
		}
	}
	return errors.Join(err, m.Server.Shutdown(ctx))
}
