package main

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/worker"
)

// startBridges hosts the MCP servers bound in the tools file at path
// ("" for none) and returns the function that drains them and how many
// it started. Each bridge's workers are made from wcfg, the command's own
// worker template: the same prefix, pool, middleware and approval policy,
// so a bridge under --pool subscribes the pool's control subjects
// (<prefix>.ctl.<pool>.<id>) that deploy/secure lets the pool's user
// read, and --approve patterns cover bridged tools as well.
func startBridges(ctx context.Context, nc *nats.Conn, path string, g *globals, wcfg worker.Config) (func(time.Duration) error, int, error) {
	none := func(time.Duration) error { return nil }
	if path == "" {
		return none, 0, nil
	}
	entries, err := bridge.LoadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var bridges []*bridge.Bridge
	drainAll := func(timeout time.Duration) error {
		dctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var errs []error
		for _, b := range bridges {
			errs = append(errs, b.Drain(dctx))
		}
		if err := errors.Join(errs...); err != nil {
			return envelope.Problemf(envelope.CodeTimeout, "MCP bridge calls still in flight after %s were cancelled", timeout)
		}
		return nil
	}
	for _, e := range entries {
		b, err := bridge.Start(ctx, nc, bridge.Config{Entry: e, Logger: g.log, AllowUnconfined: g.allowUnconfined,
			Worker: bridgeWorker(wcfg)})
		if err != nil {
			_ = drainAll(5 * time.Second)
			return nil, 0, err
		}
		g.log.Info("mcp server bridged", "namespace", b.Namespace(), "tools", b.Tools())
		bridges = append(bridges, b)
	}
	return drainAll, len(bridges), nil
}

// bridgeWorker is the template of a bridge's workers made from the
// command's: its id and description are the bridge's own.
func bridgeWorker(wcfg worker.Config) worker.Config {
	wcfg.ID, wcfg.Description = "", ""
	return wcfg
}
