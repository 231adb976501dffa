package embedserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config configures an in-process nats-server. Every field but Cluster
// means what the field of that name in mesh/embedded.Config documents
// (that package is the API; this one holds the start it shares with the
// module's own cluster tests and bench). A clustered JetStream needs
// every server named (Name).
type Config struct {
	Listen        string
	InProcessOnly bool
	Name          string
	NoJetStream   bool
	StoreDir      string
	// Cluster joins or forms a cluster with routes to the given peers.
	Cluster      *Cluster
	ReadyTimeout time.Duration
}

// Cluster is the cluster part of a Config.
type Cluster struct {
	Name string
	// Listen is host:port for routes; "" picks a random port on 127.0.0.1.
	Listen string
	// Routes are nats-route://host:port URLs of peers.
	Routes []string
}

// Start starts a nats-server in this process and waits until it
// accepts connections. tmpDir is the JetStream store it made when cfg
// names none, for the caller to remove after shutting the server down.
func Start(ctx context.Context, cfg Config) (s *server.Server, tmpDir string, err error) {
	if !cfg.NoJetStream && cfg.StoreDir == "" {
		// nats-server's own default is one shared directory under $TMPDIR,
		// which two embedded servers would fight over.
		dir, err := os.MkdirTemp("", "toolmesh-jetstream-")
		if err != nil {
			return nil, "", fmt.Errorf("jetstream store: %w", err)
		}
		cfg.StoreDir, tmpDir = dir, dir
	}
	started := false
	defer func() {
		if !started && tmpDir != "" {
			_ = os.RemoveAll(tmpDir)
		}
	}()
	opts, err := cfg.serverOptions()
	if err != nil {
		return nil, "", err
	}
	s, err = server.NewServer(opts)
	if err != nil {
		return nil, "", err
	}
	go s.Start()
	wait := cfg.ReadyTimeout
	if wait == 0 {
		wait = 10 * time.Second
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = time.Until(d)
	}
	if !s.ReadyForConnections(wait) {
		s.Shutdown()
		return nil, "", errors.New("embedded nats-server did not become ready")
	}
	started = true
	return s, tmpDir, nil
}

// serverOptions translates cfg into nats-server's options.
func (cfg Config) serverOptions() (*server.Options, error) {
	opts := &server.Options{
		ServerName: cfg.Name,
		NoSigs:     true,
		NoLog:      true,
		JetStream:  !cfg.NoJetStream,
		StoreDir:   cfg.StoreDir,
	}
	if cfg.InProcessOnly {
		opts.DontListen = true
	} else {
		host, port, err := splitListen(cfg.Listen, "127.0.0.1", server.RANDOM_PORT)
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		opts.Host, opts.Port = host, port
	}
	if c := cfg.Cluster; c != nil {
		host, port, err := splitListen(c.Listen, "127.0.0.1", server.RANDOM_PORT)
		if err != nil {
			return nil, fmt.Errorf("cluster listen: %w", err)
		}
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	return opts, nil
}

func splitListen(listen, defHost string, defPort int) (string, int, error) {
	if listen == "" {
		return defHost, defPort, nil
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	if host == "" {
		host = defHost
	}
	if port == 0 {
		port = server.RANDOM_PORT // ":0" means any free port, as with net.Listen
	}
	return host, port, nil
}
