package embedded

import (
	"context"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/internal/embedserver"
)

// Config configures an in-process nats-server.
type Config struct {
	// Listen is host:port for clients; "" or port 0 picks a free port
	// (on 127.0.0.1 when no host is given). Ignored when InProcessOnly.
	Listen string
	// InProcessOnly opens no port: connect with Server.Connect.
	InProcessOnly bool
	// Name is the server name (defaults to a generated one).
	Name string
	// NoJetStream turns JetStream off. It is on by default, storing under
	// StoreDir (a temporary directory, removed on Shutdown, when empty):
	// it holds the worker registry that lets a caller's Catalog know the
	// fleet is complete and return as soon as every worker has answered.
	NoJetStream bool
	StoreDir    string
	// ReadyTimeout bounds the wait for the server to accept connections (default 10s).
	ReadyTimeout time.Duration
}

// Server is a running in-process nats-server.
type Server struct {
	Server *server.Server
	cfg    Config
	tmpDir string // a JetStream store made for this server, removed on Shutdown
}

// Start starts a nats-server in this process and waits until it
// accepts connections.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, tmpDir, err := embedserver.Start(ctx, embedserver.Config{Listen: cfg.Listen, InProcessOnly: cfg.InProcessOnly,
		Name: cfg.Name, NoJetStream: cfg.NoJetStream, StoreDir: cfg.StoreDir, ReadyTimeout: cfg.ReadyTimeout})
	if err != nil {
		return nil, err
	}
	return &Server{Server: s, cfg: cfg, tmpDir: tmpDir}, nil
}

// ClientURL is the nats:// URL clients connect to ("" when in-process only).
func (e *Server) ClientURL() string {
	if e.cfg.InProcessOnly {
		return ""
	}
	return e.Server.ClientURL()
}

// Connect opens a client connection to this server: in-process when the
// server has no port, over loopback otherwise.
func (e *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if e.cfg.InProcessOnly {
		return nats.Connect("", append([]nats.Option{nats.InProcessServer(e.Server)}, opts...)...)
	}
	return nats.Connect(e.ClientURL(), opts...)
}

// Shutdown stops the server, waiting for it (bounded by ctx).
func (e *Server) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		e.Server.Shutdown()
		e.Server.WaitForShutdown()
		if e.tmpDir != "" {
			_ = os.RemoveAll(e.tmpDir)
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
