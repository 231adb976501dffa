package embedcluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolmesh/toolmesh/internal/embedserver"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// Start starts a server that joins or forms cfg.Cluster and waits until it
// accepts connections. It listens (InProcessOnly is refused), and with
// JetStream on it needs cfg.StoreDir: the Server it returns removes no
// store of its own on Shutdown. A clustered JetStream needs every server
// named (cfg.Name).
func Start(ctx context.Context, cfg embedserver.Config) (*embedded.Server, error) {
	switch {
	case cfg.Cluster == nil:
		return nil, errors.New("embedcluster: no cluster configured")
	case cfg.InProcessOnly:
		return nil, errors.New("embedcluster: a cluster member must listen")
	case !cfg.NoJetStream && cfg.StoreDir == "":
		return nil, errors.New("embedcluster: JetStream needs a StoreDir")
	}
	s, _, err := embedserver.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &embedded.Server{Server: s}, nil
}

// RouteURL is the nats-route:// URL peers use to join s's cluster ("" when
// s is in no cluster).
func RouteURL(s *embedded.Server) string {
	a := s.Server.ClusterAddr()
	if a == nil {
		return ""
	}
	return fmt.Sprintf("nats-route://%s", a.String())
}
