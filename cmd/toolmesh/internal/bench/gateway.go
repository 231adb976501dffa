package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// The gateway rows: a go-sdk MCP client calling the mesh's echo through
// `toolmesh mcp` (this binary, over streamable HTTP and over stdio) beside
// the same echo served directly by a go-sdk MCP server in a process of
// its own (this binary again, as a hidden bench peer), and the time from
// starting either to its first complete tools/list on 1,000 tools.
const (
	peerMCP = "mcp"
	// peerEcho is a raw NATS echo responder in a process of its own: a
	// request to it is one cross-process NATS round trip, the unit of the
	// gateway's single-call target.
	peerEcho = "echo"
	// peerGoSDK names the gateway rows' raw side in their targets: the
	// echo served directly by a go-sdk MCP server.
	peerGoSDK     = "go-sdk"
	transportHTTP = "http"
	transportStdo = "stdio"

	peersGatewayHTTP  = "raw: the same echo from a go-sdk MCP server process over streamable HTTP " + mcpSessionRevision + "; toolmesh: through `toolmesh mcp --http`"
	peersGatewayStdio = "raw: the same echo from a go-sdk MCP server process over stdio; toolmesh: through `toolmesh mcp` over stdio"
	peersColdStart    = "raw: start a go-sdk MCP server process with the same tools; toolmesh: start `toolmesh mcp` on a mesh with them; each until its tools/list is complete"
)

// gatewaySides holds the MCP sessions of the gateway rows and the
// processes behind them.
type gatewaySides struct {
	env    *Env
	url    string
	client *mcp.Client
	args   echoMessage
	// direct and via are the sessions by transport: to a go-sdk server
	// process, and through `toolmesh mcp`.
	direct, via map[string]*mcp.ClientSession
	// stops end the HTTP processes (stdio ones end with their session).
	stops []func()
	// rttSubject is where the echo peer process answers.
	rttSubject string
	// coldPrefix names the mesh of coldTools tools for the cold start.
	coldPrefix string
	coldTools  int
}

// mcpPeerTool names the i-th of the many tools of the cold-start rows.
func mcpPeerTool(i int) string { return fmt.Sprintf("tool%04d", i) }

// selfCommand is this binary with args, on the bench's server: its URL
// and any secret given as a flag go by the environment, never the argv.
func selfCommand(ctx context.Context, env *Env, url string, args ...string) (*exec.Cmd, error) {
	cmd, err := peerCommand(ctx, env, &benchOptions{}, url, env.Prefix, "", "")
	if err != nil {
		return nil, err
	}
	// peerCommand's argv is bench --peer …: keep only its connection flags.
	keep := []string{cmd.Args[0]}
	for i := 1; i < len(cmd.Args)-1; i++ {
		switch cmd.Args[i] {
		case "--creds", "--nkey", "--tls-ca", "--tls-cert", "--tls-key":
			keep = append(keep, cmd.Args[i], cmd.Args[i+1])
		}
	}
	cmd.Args = append(keep, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// newGatewaySides starts both servers over both transports and connects
// a session to each.
func newGatewaySides(ctx context.Context, env *Env, url, prefix string, payload int) (_ *gatewaySides, err error) {
	s := &gatewaySides{env: env, url: url, direct: map[string]*mcp.ClientSession{}, via: map[string]*mcp.ClientSession{},
		client: mcp.NewClient(&mcp.Implementation{Name: "toolmesh-bench", Version: "0.0.1"}, nil)}
	s.args.Message = strings.Repeat("x", payload)
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	for _, start := range []struct {
		into map[string]*mcp.ClientSession
		args []string
	}{
		{s.direct, []string{"bench", "--peer", peerMCP, "--peer-mode", transportStdo, "--log-level", "error"}},
		{s.via, []string{"mcp", "--prefix", prefix, "--log-level", "error"}},
	} {
		cs, err := s.stdio(ctx, start.args...)
		if err != nil {
			return nil, err
		}
		start.into[transportStdo] = cs
	}
	if s.direct[transportHTTP], err = s.http(ctx, false, "bench", "--peer", peerMCP, "--peer-mode", transportHTTP, "--log-level", "error"); err != nil {
		return nil, err
	}
	if s.via[transportHTTP], err = s.http(ctx, true, "mcp", "--http", "127.0.0.1:0", "--prefix", prefix, "--log-level", "error"); err != nil {
		return nil, err
	}
	s.rttSubject = prefix + ".rtt"
	if err := s.startEcho(ctx, prefix); err != nil {
		return nil, err
	}
	return s, nil
}

// startEcho starts the echo peer process and waits until it answers.
func (s *gatewaySides) startEcho(ctx context.Context, prefix string) error {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd, err := selfCommand(pctx, s.env, s.url, "bench", "--peer", peerEcho, "--prefix", prefix, "--log-level", "error")
	if err != nil {
		cancel()
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	cmd.Stderr = &capped{max: 4096}
	stdin, _ := cmd.StdinPipe() // the peer serves until its stdin closes
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		cancel()
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	s.stops = append(s.stops, func() { _ = stdin.Close(); cancel(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		return envelope.Problemf(envelope.CodeConnectionLost, "bench --peer %s: %q, %v (stderr: %s)", peerEcho, line, err, cmd.Stderr)
	}
	return nil
}

// runEchoPeer answers requests on <prefix>.rtt with their payload until
// stdin closes, saying "ready" on stdout once it is subscribed.
func runEchoPeer(ctx context.Context, env *Env) error {
	nc, err := env.Dial(ctx, "bench echo")
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := nc.Subscribe(env.Prefix+".rtt", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	if err := nc.Flush(); err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	fmt.Fprintln(env.Stdout, "ready")
	_, _ = io.Copy(io.Discard, env.Stdin)
	return nil
}

// stdio starts this binary with args and connects over its stdin/stdout.
func (s *gatewaySides) stdio(ctx context.Context, args ...string) (*mcp.ClientSession, error) {
	cmd, err := selfCommand(context.WithoutCancel(ctx), s.env, s.url, args...)
	if err != nil {
		return nil, envelope.AsProblem(err, envelope.CodeInternal)
	}
	cmd.Stderr = &capped{max: 4096}
	cs, err := s.client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeConnectionLost, "%s: %v (stderr: %s)", strings.Join(args, " "), err, cmd.Stderr)
	}
	return cs, nil
}

// http starts this binary with args, reads the URL it serves MCP on
// (from its stderr banner when fromStderr, else its stdout's first line)
// and connects a 2025-11-25 session to it.
func (s *gatewaySides) http(ctx context.Context, fromStderr bool, args ...string) (*mcp.ClientSession, error) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd, err := selfCommand(pctx, s.env, s.url, args...)
	if err != nil {
		cancel()
		return nil, envelope.AsProblem(err, envelope.CodeInternal)
	}
	stdin, _ := cmd.StdinPipe() // the bench peer serves until its stdin closes
	pipe, err := cmd.StdoutPipe()
	if fromStderr {
		cmd.Stdout = io.Discard
		pipe, err = cmd.StderrPipe()
	}
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		cancel()
		return nil, envelope.AsProblem(err, envelope.CodeInternal)
	}
	s.stops = append(s.stops, func() { _ = stdin.Close(); cancel(); _ = cmd.Wait() })
	endpoint, err := readEndpoint(pipe)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeConnectionLost, "%s: %v", strings.Join(args, " "), err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}}
	cs, err := s.client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: mcpSessionRevision})
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeConnectionLost, "%s: %v", strings.Join(args, " "), err)
	}
	return cs, nil
}

// readEndpoint reads lines until one carries an http:// URL, then drains
// the rest in the background so the process never blocks on the pipe.
func readEndpoint(r io.Reader) (string, error) {
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		if i := strings.Index(lines.Text(), "http://"); i >= 0 {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return strings.Fields(lines.Text()[i:])[0], nil
		}
	}
	return "", errors.New("the process ended before it said where it serves MCP")
}

func (s *gatewaySides) close() {
	for _, m := range []map[string]*mcp.ClientSession{s.direct, s.via} {
		for _, cs := range m {
			_ = cs.Close()
		}
	}
	for _, stop := range s.stops {
		stop()
	}
}

// echo calls echo on one session.
func (s *gatewaySides) echo(ctx context.Context, cs *mcp.ClientSession) error {
	return callEcho(ctx, cs, s.args, "echo")
}

// callEcho calls echo with args on one MCP session; a result that is an
// error fails as what says, with the result's text.
func callEcho(ctx context.Context, cs *mcp.ClientSession, args any, what string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s failed: %s", what, contentText(res.Content))
	}
	return nil
}

// contentText is the text of a tool result's text contents.
func contentText(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// coldStart starts a server process with args and returns how long it
// took until its tools/list was complete; closing the session is not
// counted.
func (s *gatewaySides) coldStart(ctx context.Context, args ...string) (time.Duration, error) {
	t0 := time.Now()
	cs, err := s.stdio(ctx, args...)
	if err != nil {
		return 0, err
	}
	defer func() { _ = cs.Close() }()
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return 0, err
		}
		n++
	}
	took := time.Since(t0)
	if n < s.coldTools {
		return 0, fmt.Errorf("tools/list gave %d tools, want at least %d", n, s.coldTools)
	}
	return took, nil
}

// startGateway hosts the cold-start row's tools on a mesh of their own
// and starts the gateway rows' servers.
func (b *bencher) startGateway(ctx context.Context, serve *nats.Conn, url, prefix string, o *benchOptions, env *Env) error {
	coldPrefix := prefix + "-cold"
	if o.coldTools > 0 {
		w, err := worker.New(serve, worker.Config{Prefix: coldPrefix, Logger: env.Log, Description: "toolmesh bench cold start"})
		if err != nil {
			return envelope.AsProblem(err, envelope.CodeInternal)
		}
		b.cold = w
		echo := worker.HandlerFunc(func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) { return req.Args, nil })
		for i := range o.coldTools {
			if err := w.Register(envelope.ToolSpec{Name: mcpPeerTool(i), Description: "echo", InputSchema: json.RawMessage(echoSchema)}, echo); err != nil {
				return envelope.AsProblem(err, envelope.CodeInternal)
			}
		}
		if err := serve.Flush(); err != nil {
			return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
		}
	}
	gw, err := newGatewaySides(ctx, env, url, prefix, o.payload)
	if err != nil {
		return err
	}
	gw.coldPrefix, gw.coldTools = coldPrefix, o.coldTools
	b.gw = gw
	return nil
}

// gatewayScenarios are the gateway rows at each level and the cold start.
func gatewayScenarios(levels []int, coldTools int) []benchScenario {
	var out []benchScenario
	for _, n := range levels {
		for _, t := range []struct{ transport, peers string }{{transportHTTP, peersGatewayHTTP}, {transportStdo, peersGatewayStdio}} {
			s := benchScenario{name: "mcp gateway, " + t.transport, inFlight: n, peers: t.peers, rawPeer: peerGoSDK,
				raw: func(b *bencher, ctx context.Context) error {
					return b.gw.echo(ctx, b.gw.direct[t.transport])
				},
				toolmesh: func(b *bencher, ctx context.Context) error { return b.gw.echo(ctx, b.gw.via[t.transport]) },
				goals:    []benchGoal{{metric: metricThroughput, peer: peerGoSDK, bound: 0.8}}}
			if n == 1 {
				// A single call through the gateway crosses processes over
				// NATS where a direct call does not: it may cost the direct
				// server's p50 and one and a half raw NATS round trips
				// between processes, measured in the same rounds.
				s.roundTrip = func(b *bencher, ctx context.Context) error {
					_, err := b.raw.RequestWithContext(ctx, b.gw.rttSubject, b.args)
					return err
				}
				s.goals = append(s.goals, benchGoal{metric: metricP50Excess, peer: peerGoSDK, atMost: true, bound: 1.5})
			}
			out = append(out, s)
		}
	}
	if coldTools > 0 {
		out = append(out, benchScenario{name: fmt.Sprintf("mcp cold start, %d tools", coldTools), inFlight: 1, peers: peersColdStart,
			rawTimed: func(b *bencher, ctx context.Context) (time.Duration, error) {
				return b.gw.coldStart(ctx, "bench", "--peer", peerMCP, "--peer-mode", transportStdo, "--peer-tools", strconv.Itoa(coldTools), "--log-level", "error")
			},
			toolmeshTimed: func(b *bencher, ctx context.Context) (time.Duration, error) {
				return b.gw.coldStart(ctx, "mcp", "--prefix", b.gw.coldPrefix, "--log-level", "error")
			},
			goals: []benchGoal{{metric: metricP50, atMost: true, bound: 1.5}}, minCalls: 2})
	}
	return out
}

// runMCPPeer is the go-sdk MCP server of the gateway rows: echo, and
// --peer-tools more tools of echo's schema, over stdio, or over
// streamable HTTP on a loopback port it prints on stdout, until stdin
// closes.
func runMCPPeer(ctx context.Context, env *Env, o *benchOptions) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "toolmesh-bench-peer", Version: "0.0.1"}, nil)
	echo := func(_ context.Context, _ *mcp.CallToolRequest, in echoMessage) (*mcp.CallToolResult, echoMessage, error) {
		return nil, in, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo"}, echo)
	for i := range o.peerTools {
		mcp.AddTool(s, &mcp.Tool{Name: mcpPeerTool(i), Description: "echo"}, echo)
	}
	switch o.peerMode {
	case transportStdo:
		if err := s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}); err != nil && ctx.Err() == nil {
			return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
		}
		return nil
	case transportHTTP:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return envelope.NewProblem(envelope.CodeInternal, err.Error())
		}
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
		go func() { _ = srv.Serve(ln) }()
		fmt.Fprintf(env.Stdout, "http://%s\n", ln.Addr())
		_, _ = io.Copy(io.Discard, env.Stdin)
		return srv.Close()
	}
	return envelope.NewProblem(envelope.CodeInvalidInput, "--peer mcp is internal to the bench: --peer-mode stdio or http")
}

// nopWriteCloser leaves stdout open when the MCP peer's session ends.
type nopWriteCloser struct{ io.Writer }

// Close does nothing: the process's stdout outlives the session.
func (nopWriteCloser) Close() error { return nil }
