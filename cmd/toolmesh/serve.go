package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/otlp"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
	"github.com/toolmesh/toolmesh/worker/workermw"
)

func newDevCmd(g *globals) *cobra.Command {
	var dc devConfig
	cmd := usage.Command("dev", "Run a complete single-node mesh: an embedded NATS server and a worker with the demo tools",
		func(cmd *cobra.Command) error {
			return runDev(cmd.Context(), g, dc)
		})
	dc.host.add(cmd)
	dc.tasks.add(cmd)
	cmd.Flags().StringVar(&dc.listen, "listen", "127.0.0.1:4222", "host:port of the embedded NATS server")
	cmd.Flags().StringVar(&dc.config, "config", "", "tools file (YAML) of command-line tools to host as well")
	addAllowUnconfined(cmd, g)
	return cmd
}

// devConfig is what `toolmesh dev`'s flags set.
type devConfig struct {
	listen, config string
	host           hostFlags
	tasks          taskFlags
}

// hostFlags are the flags of a command that hosts tools on a worker: the
// approval policy (docs/protocol.md §23.7) and how long calls in flight
// may take to finish on shutdown.
type hostFlags struct {
	approvals worker.Approvals
	drain     time.Duration
}

func (h *hostFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&h.approvals.Tools, "approve", nil, "require the caller's approval before tools matching this pattern run (path.Match over the name, e.g. 'fs.*'; repeatable)")
	cmd.Flags().BoolVar(&h.approvals.Destructive, "approve-destructive", false, "require the caller's approval before every tool that is not read-only and whose destructive hint is not false runs")
	cmd.Flags().DurationVar(&h.drain, "drain-timeout", 30*time.Second, "how long calls in flight may take to finish on shutdown")
}

// runDev runs `toolmesh dev`: an embedded server, the demo tools and
// the tools file's, until a signal drains them.
func runDev(ctx context.Context, g *globals, dc devConfig) error {
	listen, config, drain := dc.listen, dc.config, dc.host.drain
	var file *cli.File
	if config != "" {
		f, err := cli.LoadFile(config)
		if err != nil {
			return err
		}
		f.AllowUnconfined = g.allowUnconfined
		file = f
	}
	if err := checkListen(listen); err != nil {
		return err
	}
	shutdown := otlp.Setup(ctx, "toolmesh-dev", g.log)
	defer shutdown()
	srv, err := embedded.Start(ctx, embedded.Config{Listen: listen}) // with JetStream: it holds the worker registry
	if err != nil {
		return envelope.Problemf(envelope.CodeInvalidConfig, "cannot start the embedded NATS server on %s: %v", listen, err).
			WithFix("Choose another address with --listen, or stop whatever uses it.", envelope.HasPlaceholders)
	}
	defer func() { _ = srv.Shutdown(context.Background()) }()
	nc, err := srv.Connect()
	if err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	defer nc.Close()
	wcfg := worker.Config{Prefix: g.prefix, Logger: g.log, Description: "toolmesh dev", Middleware: commandMiddleware(),
		Approvals: dc.host.approvals}
	w, err := worker.New(nc, wcfg)
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	if err := registerDemo(w); err != nil {
		w.Stop() // it joined the mesh: leave it before exiting, or it stays registered
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	if file != nil {
		if err := cli.RegisterFile(w, file, g.log); err != nil {
			w.Stop()
			return envelope.AsProblem(err, envelope.CodeInvalidConfig)
		}
	}
	drainBridges, _, err := startBridges(ctx, nc, config, g, wcfg)
	if err != nil {
		w.Stop()
		return err
	}
	stopTasks, err := startDevTasks(ctx, srv, g, dc.tasks)
	if err != nil {
		w.Stop()
		_ = drainBridges(0)
		return err
	}
	defer stopTasks()
	announce(ctx, g, w)
	printDevBanner(g, w, srv.ClientURL())
	return serveUntil(ctx, w, drainBridges, drain, g)
}

// printDevBanner tells the user where dev's mesh listens, which tools it
// serves and how to try them.
func printDevBanner(g *globals, w *worker.Worker, url string) {
	fmt.Fprintf(g.stdout, "toolmesh dev: mesh listening on %s\n", url)
	fmt.Fprintf(g.stdout, "tools: %s\n", toolNames(w))
	fmt.Fprintf(g.stdout, "try:   toolmesh call echo --args '{\"message\":\"hi\"}'\n       toolmesh call count --stream\n       toolmesh call count --detach   (a durable task; then toolmesh tasks watch ID)\n")
	fmt.Fprintf(g.stdout, "       toolmesh call remove --args '{\"path\":\"/tmp/x\"}'   (it asks first)\n")
	if url != mesh.DefaultURL {
		fmt.Fprintf(g.stdout, "       (with --server %s or NATS_URL=%s)\n", url, url)
	}
	fmt.Fprintf(g.stdout, "Ctrl-C drains and stops.\n")
}

// startDevTasks runs dev's task service on a connection of its own, so
// durable calls work out of the box (docs/protocol.md §22).
func startDevTasks(ctx context.Context, srv *embedded.Server, g *globals, tf taskFlags) (stop func(), err error) {
	nc, err := srv.Connect()
	if err != nil {
		return nil, envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	svc, err := tasks.New(ctx, nc, tf.config(g))
	if err != nil {
		nc.Close()
		return nil, envelope.Problemf(envelope.CodeInternal, "task service: %v", err)
	}
	return func() { svc.Close(context.Background()); nc.Close() }, nil
}

func newWorkerCmd(g *globals) *cobra.Command {
	var config, pool string
	var host hostFlags
	var audited bool
	cmd := usage.Command("worker --config tools.yaml", "Join a mesh and host the command-line tools of a tools file",
		func(cmd *cobra.Command) error {
			ctx := cmd.Context()
			if config == "" {
				return envelope.NewProblem(envelope.CodeInvalidConfig, "--config is required: the tools file to host").
					WithFix("Pass --config tools.yaml (see the README for the format).", envelope.HasPlaceholders)
			}
			file, err := cli.LoadFile(config)
			if err != nil {
				return err
			}
			file.AllowUnconfined = g.allowUnconfined
			shutdown := otlp.Setup(ctx, "toolmesh-worker", g.log)
			defer shutdown()
			nc, err := g.dial(ctx, "worker")
			if err != nil {
				return err
			}
			defer nc.Close()
			wcfg := worker.Config{Prefix: g.prefix, Pool: pool, Logger: g.log, Middleware: commandMiddleware(), Approvals: host.approvals}
			if audited {
				ac := auditConfig(g, pool, "")
				wcfg.Middleware = append([]worker.Middleware{workermw.Audit(nc, ac)}, wcfg.Middleware...)
				wcfg.OnAnswer = workermw.AuditAnswers(nc, ac)
				wcfg.OnRefused = workermw.AuditRefused(nc, ac)
			}
			return runWorker(ctx, g, nc, file, config, wcfg, host.drain)
		})
	cmd.Flags().StringVar(&config, "config", "", "tools file (YAML) to host")
	host.add(cmd)
	cmd.Flags().StringVar(&pool, "pool", "", "worker pool (NATS identity) this worker belongs to: its control subject is <prefix>.ctl.<pool>.<id> (see deploy/secure)")
	cmd.Flags().BoolVar(&audited, "audit", false, "record every call (who, tool, args digest, outcome, ran) on <prefix>.audit.<tool> for the audit stream (see toolmesh audit)")
	addAllowUnconfined(cmd, g)
	return cmd
}

// runWorker hosts the tools file's command-line tools on a worker of its
// own and bridges its MCP servers (each bridge has its own worker). A file
// that only bridges starts no empty worker, and a worker that has joined
// the mesh leaves it (Stop: goodbye beacon, registry entry deleted) on any
// failure before it serves, so no phantom stays registered.
func runWorker(ctx context.Context, g *globals, nc *nats.Conn, file *cli.File, config string, wcfg worker.Config, drain time.Duration) error {
	var w *worker.Worker
	if len(file.Specs()) > 0 {
		var err error
		if w, err = worker.New(nc, wcfg); err != nil {
			return envelope.AsProblem(err, envelope.CodeInternal) // a refused subscription is forbidden, naming it
		}
		if err := cli.RegisterFile(w, file, g.log); err != nil {
			w.Stop()
			return envelope.AsProblem(err, envelope.CodeInvalidConfig)
		}
	}
	drainBridges, bridged, err := startBridges(ctx, nc, config, g, wcfg)
	if err != nil {
		if w != nil {
			w.Stop()
		}
		return err
	}
	if w == nil {
		g.log.Info("bridges ready", "bridges", bridged, "server", nc.ConnectedUrlRedacted())
		return serveBridges(ctx, nc, drainBridges, drain)
	}
	announce(ctx, g, w)
	g.log.Info("worker ready", "worker_id", w.ID(), "server", nc.ConnectedUrlRedacted(), "tools", toolNames(w))
	return serveUntil(ctx, w, drainBridges, drain, g)
}

// serveBridges is serveUntil for a process whose only workers are its
// bridges': until ctx ends (drain them) or the connection closes for good
// (stop them, and exit connection_lost).
func serveBridges(ctx context.Context, nc *nats.Conn, drainBridges func(time.Duration) error, drain time.Duration) error {
	closed := nc.StatusChanged(nats.CLOSED)
	defer nc.RemoveStatusListener(closed)
	if !nc.IsClosed() {
		select {
		case <-ctx.Done():
			return drainBridges(drain)
		case <-closed:
		}
	}
	_ = drainBridges(0)
	return envelope.NewProblem(envelope.CodeConnectionLost, "the NATS connection closed for good; the bridges cannot serve and exit")
}

// addAllowUnconfined adds --allow-unconfined, the operator's explicit
// consent to run sandboxed tools unconfined where the host cannot confine
// them (each is logged as a warning); without it they are refused.
func addAllowUnconfined(cmd *cobra.Command, g *globals) {
	cmd.Flags().BoolVar(&g.allowUnconfined, "allow-unconfined", false,
		"run tools whose sandbox this host cannot enforce UNCONFINED (logged) instead of refusing to start")
}

// commandMiddleware is what the command's workers run every call through:
// metrics into the global meter provider (a no-op unless otlp.Setup
// installed one).
func commandMiddleware() []worker.Middleware {
	return []worker.Middleware{workermw.Metrics(otel.GetMeterProvider())}
}

// serveUntil serves w until ctx ends or its connection closes (see
// worker.Serve); bridged MCP servers drain with the worker, or stop at
// once when no drain is possible.
func serveUntil(ctx context.Context, w *worker.Worker, drainBridges func(time.Duration) error, drain time.Duration, g *globals) error {
	return w.Serve(ctx, worker.ServeConfig{
		Drain: func() error { return errors.Join(drainBridges(drain), drainWorker(w, drain, g)) },
		Stop:  func() { _ = drainBridges(0) },
	})
}

// drainWorker stops taking calls and lets the ones in flight finish.
func drainWorker(w *worker.Worker, timeout time.Duration, g *globals) error {
	ctx, interrupted, cancel := drainContext(timeout, g.log)
	defer cancel()
	g.log.Info("draining: no new calls, finishing the ones in flight (Ctrl-C again stops at once)")
	if err := w.Drain(ctx); err != nil {
		if interrupted() {
			return envelope.NewProblem(envelope.CodeCancelled, "interrupted twice: calls in flight were cancelled")
		}
		return envelope.Problemf(envelope.CodeTimeout, "calls still in flight after %s were cancelled", timeout)
	}
	g.log.Info("stopped")
	return nil
}

func toolNames(w *worker.Worker) string {
	var names []string
	for _, s := range w.Specs() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// announce makes ready mean listed: the registry holds the worker's tools
// (and its beacon is out) before the command says it is ready.
func announce(ctx context.Context, g *globals, w *worker.Worker) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.Announce(actx); err != nil {
		g.log.Warn("worker not yet listed; it will be at its next registry refresh", "worker_id", w.ID(), "err", err)
	}
}
