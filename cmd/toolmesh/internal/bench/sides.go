package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/oklog/ulid/v2"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// echoSchema is the bench echo tool's input: one property, the input the
// throughput targets are set for, so every toolmesh call pays validation.
const echoSchema = `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`

// bencher holds every side: a raw responder and a toolmesh worker on one
// connection, a micro service on its own (micro relies on the handlers it
// sets on its connection), a raw requester and a toolmesh caller on two
// others.
type bencher struct {
	conns      []*nats.Conn
	w          *worker.Worker
	c          *caller.Caller
	cOff       *caller.Caller // the same, with coalescing switched off
	svc        micro.Service
	raw        *nats.Conn
	rawSubject string
	trueBin    string
	prefix     string
	log        *slog.Logger
	// sandboxed says the host can confine programs: the sandboxed CLI
	// row runs only then.
	sandboxed bool
	args      json.RawMessage
	deltas    int
	// peers are the MCP and gRPC servers users would pick instead.
	peers *benchPeers
	// durable is the durable row's sides; nil without JetStream.
	durable *benchDurable
	// durableR3 is the R3 durable rows' sides on a cluster of their own;
	// nil unless the bench runs on its embedded server.
	durableR3 *benchDurable
	// blobs are the large results by size in MiB.
	blobs map[int]json.RawMessage
	// gw holds the gateway rows' MCP sessions and processes.
	gw *gatewaySides
	// cold hosts the cold-start row's many tools.
	cold *worker.Worker
	// fleet is the fleet rows' workers and responders (fleet.go).
	fleet *benchFleet
}

func newBencher(ctx context.Context, dial func(string) (*nats.Conn, error), url string, o *benchOptions, env *Env) (*bencher, error) {
	maxInFlight, payload, deltas := slices.Max(slices.Concat(o.levels, o.cliLevels, o.gatewayLevels)), o.payload, o.deltas
	b := &bencher{deltas: deltas, trueBin: trueBinary()}
	if support := sandbox.Probe(context.Background()); support.Problem == "" {
		b.sandboxed = true
	} else {
		fmt.Fprintf(env.Stderr, "the sandboxed CLI rows are skipped: %s\n", support.Problem)
	}
	ok := false
	defer func() {
		if !ok {
			b.close()
		}
	}()
	for _, name := range []string{"bench responder", "bench raw", "bench caller", "bench micro"} {
		nc, err := dial(name)
		if err != nil {
			return nil, err
		}
		b.conns = append(b.conns, nc)
	}
	serve, raw, call := b.conns[0], b.conns[1], b.conns[2]
	b.raw = raw
	// A private prefix and subject: the bench never joins a live mesh's
	// queue groups or answers its callers.
	prefix := env.Prefix + "-bench-" + strings.ToLower(ulid.Make().String())
	b.rawSubject = prefix + ".raw"
	b.prefix, b.log = prefix, env.Log
	b.args, _ = json.Marshal(map[string]string{"message": strings.Repeat("x", payload)})

	if err := b.serveSides(ctx, dial, serve, url, prefix, maxInFlight, o, env); err != nil {
		return nil, err
	}
	var err error
	if b.peers, err = newBenchPeers(ctx, maxInFlight, payload, deltas); err != nil {
		return nil, err
	}
	if err := b.startCallers(call, prefix, env); err != nil {
		return nil, err
	}
	b.startDurableRow(ctx, dial, prefix, maxInFlight, env)
	for _, nc := range b.conns {
		if err := nc.Flush(); err != nil {
			return nil, envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
		}
	}
	ok = true
	return b, nil
}

// serveSides starts every side the rows call: the raw responder, the
// micro endpoint, the mesh worker with its big results, the fleet, and
// the gateway processes.
func (b *bencher) serveSides(ctx context.Context, dial func(string) (*nats.Conn, error), serve *nats.Conn, url, prefix string, maxInFlight int, o *benchOptions, env *Env) error {
	if err := b.serveRaw(serve); err != nil {
		return err
	}
	if err := b.serveMicro(b.conns[3]); err != nil {
		return err
	}
	if err := b.serveMesh(serve, prefix, maxInFlight, env); err != nil {
		return err
	}
	if err := b.serveBig(serve, b.w, o.bigLevels); err != nil {
		return err
	}
	if o.fleetWorkers > 0 {
		if err := b.serveFleet(dial, prefix, o, env); err != nil {
			return err
		}
	}
	if len(o.gatewayLevels) > 0 || o.coldTools > 0 {
		if err := b.startGateway(ctx, serve, url, prefix, o, env); err != nil {
			return err
		}
	}
	return nil
}

// startCallers makes the mesh callers on call: one coalescing, one not.
func (b *bencher) startCallers(call *nats.Conn, prefix string, env *Env) error {
	c, err := caller.New(call, caller.Config{Prefix: prefix, Logger: env.Log})
	if err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	b.c = c
	if b.cOff, err = caller.New(call, caller.Config{Prefix: prefix, Logger: env.Log, NoCoalescing: true}); err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	return nil
}

// trueBinary is the program of the CLI row: /bin/true, or true on PATH
// where there is no /bin/true.
func trueBinary() string {
	if _, err := os.Stat("/bin/true"); err == nil {
		return "/bin/true"
	}
	if p, err := exec.LookPath("true"); err == nil {
		return p
	}
	return "/bin/true"
}

// serveRaw answers the raw side: echo by request/reply, and a stream of
// b.deltas messages to one request.
func (b *bencher) serveRaw(serve *nats.Conn) error {
	if _, err := serve.QueueSubscribe(b.rawSubject+".echo", "q", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	if _, err := serve.Subscribe(b.rawSubject+".stream", func(m *nats.Msg) {
		for i := range b.deltas {
			_ = serve.Publish(m.Reply, fmt.Appendf(nil, `{"i":%d}`, i+1))
		}
		_ = serve.Publish(m.Reply, []byte(`{"done":true}`))
	}); err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	return nil
}

// serveMicro is the standard peer: a nats.go micro endpoint doing the
// same echo, requested by raw nats.go request/reply. Beside it, on the
// same service and connection, micro+confirm: the same echo paying, before
// each reply, what the pickup confirmation costs (protocol §8.2) — a
// heartbeat-sized message to the requester, then a flush, the PING/PONG
// round trip after which the server has routed it. At 1 in flight that is
// the floor of any call that keeps the confirmation; at 16 and 256 its one
// handler goroutine pays a round trip per request in turn, where the
// worker confirms a batch of calls with one.
func (b *bencher) serveMicro(nc *nats.Conn) error {
	svc, err := micro.AddService(nc, micro.Config{
		Name: "toolmesh-bench", Version: "0.0.1",
		Endpoint: &micro.EndpointConfig{
			Subject: b.rawSubject + subjectMicro,
			Handler: micro.HandlerFunc(func(r micro.Request) { _ = r.Respond(r.Data()) }),
		},
	})
	if err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	b.svc = svc
	// The size of the worker's hb frame naming one call (§8.1).
	beat := fmt.Appendf(nil, "tm2 hb worker=%s interval=1000\n%s", ulid.Make(), ulid.Make())
	confirm := micro.HandlerFunc(func(r micro.Request) {
		// A sibling of the reply subject: the requester's inbox
		// subscription receives it and drops it, as a caller reads a
		// heartbeat, and it is not taken for the reply.
		reply := r.Reply()
		_ = nc.Publish(reply[:strings.LastIndexByte(reply, '.')+1]+"hb", beat)
		if err := nc.Flush(); err != nil {
			_ = r.Error("503", err.Error(), nil)
			return
		}
		_ = r.Respond(r.Data())
	})
	if err := svc.AddEndpoint("confirm", confirm, micro.WithEndpointSubject(b.rawSubject+subjectMicroConfirm)); err != nil {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	return nil
}

// serveMesh hosts the toolmesh side: a worker with echo, count and a CLI
// binding of /bin/true.
func (b *bencher) serveMesh(serve *nats.Conn, prefix string, maxInFlight int, env *Env) error {
	w, err := worker.New(serve, worker.Config{Prefix: prefix, Logger: env.Log, Description: "toolmesh bench", Limits: worker.Limits{MaxConcurrent: maxInFlight, MaxPerIdentity: maxInFlight}})
	if err != nil {
		return envelope.NewProblem(envelope.CodeInternal, err.Error())
	}
	b.w = w
	// The echo never blocks, so it says so (worker.Inline): like micro's
	// handlers, its calls may run on the goroutine that reads them.
	echo := worker.Inline(worker.HandlerFunc(
		func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) { return req.Args, nil }))
	if err := w.Register(envelope.ToolSpec{Name: "echo", InputSchema: json.RawMessage(echoSchema)}, echo); err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	yes := true
	if err := w.Register(envelope.ToolSpec{Name: echoIdempotent, InputSchema: json.RawMessage(echoSchema),
		Annotations: &envelope.Annotations{Idempotent: &yes, ReadOnly: &yes}}, echo); err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	if err := w.Register(envelope.ToolSpec{Name: "count", Streaming: true}, worker.HandlerFunc(b.count)); err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	tools := fmt.Appendf(nil, "tools:\n  - name: \"true\"\n    binding:\n      cli:\n        cmd: %s\n        output_format: lines\n", strconv.Quote(b.trueBin))
	if b.sandboxed {
		more, err := sandboxedTools(b.trueBin)
		if err != nil {
			return envelope.AsProblem(err, envelope.CodeInternal)
		}
		tools = append(tools, more...)
	}
	file, err := cli.Parse(tools)
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	if err := cli.RegisterFile(w, file, env.Log); err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	return nil
}

// count streams b.deltas deltas, then its result.
func (b *bencher) count(_ context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
	for i := range b.deltas {
		if err := emit.Delta(json.RawMessage(append(strconv.AppendInt([]byte(`{"i":`), int64(i+1), 10), '}'))); err != nil {
			return nil, err
		}
	}
	return map[string]int{"count": b.deltas}, nil
}

func (b *bencher) close() {
	if b.peers != nil {
		b.peers.close()
	}
	for _, d := range []*benchDurable{b.durable, b.durableR3} {
		if d != nil {
			d.close()
		}
	}
	if b.gw != nil {
		b.gw.close()
	}
	if b.cold != nil {
		b.cold.Stop()
	}
	if b.fleet != nil {
		b.fleet.close()
	}
	for _, c := range []*caller.Caller{b.c, b.cOff} {
		if c != nil {
			_ = c.Close()
		}
	}
	if b.w != nil {
		b.w.Stop()
	}
	if b.svc != nil {
		_ = b.svc.Stop()
	}
	for _, nc := range b.conns {
		nc.Close()
	}
}

func (b *bencher) rawUnary(ctx context.Context) error {
	_, err := b.raw.RequestWithContext(ctx, b.rawSubject+".echo", b.args)
	return err
}

// The micro peers' subjects under the bench's raw subject.
const (
	subjectMicro        = ".micro"
	subjectMicroConfirm = ".micro.confirm"
)

func (b *bencher) microUnary(ctx context.Context) error {
	return b.microRequest(ctx, subjectMicro)
}

// microConfirmUnary requests micro+confirm (serveMicro).
func (b *bencher) microConfirmUnary(ctx context.Context) error {
	return b.microRequest(ctx, subjectMicroConfirm)
}

// microRequest requests the echo of one of the micro endpoints; an error
// the endpoint answers fails the call.
func (b *bencher) microRequest(ctx context.Context, subject string) error {
	m, err := b.raw.RequestWithContext(ctx, b.rawSubject+subject, b.args)
	if err == nil && m.Header.Get(micro.ErrorHeader) != "" {
		err = fmt.Errorf("micro endpoint %s: %s", subject, m.Header.Get(micro.ErrorHeader))
	}
	return err
}

// meshUnary calls echo; opts select a variant of the call.
func (b *bencher) meshUnary(ctx context.Context, opts ...caller.Option) error {
	_, err := b.c.Call(ctx, "echo", b.args, opts...)
	return err
}

// echoIdempotent is echo declared idempotent and read-only.
const echoIdempotent = "echo.idempotent"

// meshUnaryIdempotent calls echoIdempotent as an idempotent call: it
// accepts ran "maybe", so the worker starts it unconfirmed.
func (b *bencher) meshUnaryIdempotent(ctx context.Context) error {
	return b.meshUnaryOf(ctx, echoIdempotent, caller.Idempotent())
}

// meshUnaryOf calls tool with echo's args.
func (b *bencher) meshUnaryOf(ctx context.Context, tool string, opts ...caller.Option) error {
	_, err := b.c.Call(ctx, tool, b.args, opts...)
	return err
}

// meshUnaryAlone calls echo through the caller whose coalescing is off.
func (b *bencher) meshUnaryAlone(ctx context.Context) error {
	_, err := b.cOff.Call(ctx, "echo", b.args)
	return err
}

// rawNoResponders is a raw request to a subject nobody subscribes: it
// succeeds when NATS says so.
func (b *bencher) rawNoResponders(ctx context.Context) error {
	_, err := b.raw.RequestWithContext(ctx, b.rawSubject+".nobody", b.args)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil
	}
	return fmt.Errorf("want no responders, got %v", err)
}

// meshNoResponders calls a tool nobody hosts: it succeeds on tool_not_found.
func (b *bencher) meshNoResponders(ctx context.Context) error {
	_, err := b.c.Call(ctx, "nobody", b.args)
	var p *envelope.Problem
	if errors.As(err, &p) && p.Code == envelope.CodeToolNotFound {
		return nil
	}
	return fmt.Errorf("want tool_not_found, got %v", err)
}

// rawSpawn runs /bin/true directly with os/exec.
func (b *bencher) rawSpawn(ctx context.Context) error {
	return exec.CommandContext(ctx, b.trueBin).Run()
}

// benchSandbox is the sandbox of the sandboxed CLI row: a typical one,
// with every kind of confinement (files, no network, each limit).
const benchSandbox = "{read: [/usr/share], network: none, limits: {cpu_seconds: 10, memory_mb: 256, files: 64, processes: 16}}"

// meshSpawnSandboxed runs /bin/true through the mesh's CLI binding in a
// sandbox (benchSandbox).
func (b *bencher) meshSpawnSandboxed(ctx context.Context) error {
	_, err := b.c.Call(ctx, "true.sandboxed", json.RawMessage(`{}`))
	return err
}

// meshSpawn runs /bin/true through the mesh's CLI binding.
func (b *bencher) meshSpawn(ctx context.Context) error {
	_, err := b.c.Call(ctx, "true", json.RawMessage(`{}`))
	return err
}

func (b *bencher) rawStream(ctx context.Context) error {
	inbox := b.raw.NewInbox()
	sub, err := b.raw.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := b.raw.PublishRequest(b.rawSubject+".stream", inbox, nil); err != nil {
		return err
	}
	for range b.deltas + 1 {
		if _, err := sub.NextMsgWithContext(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (b *bencher) meshStream(ctx context.Context) error {
	s, err := b.c.Stream(ctx, "count", map[string]any{})
	if err != nil {
		return err
	}
	defer s.Close()
	n := 0
	for ev, err := range s.Events() {
		if err != nil {
			return err
		}
		if p := ev.Problem(); p != nil {
			return p
		}
		if ev.Type == envelope.EventDelta {
			n++
		}
	}
	if n != b.deltas {
		return fmt.Errorf("stream delivered %d of %d deltas", n, b.deltas)
	}
	return nil
}
