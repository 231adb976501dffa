package bench

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/redact"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// benchOptions are the bench command's flags.
type benchOptions struct {
	duration    time.Duration
	rounds      int
	concurrency string
	cliFlight   string
	bigResults  string
	gatewayFlt  string
	// rows, when set, keeps only the ratio rows whose name it matches.
	rows         string
	rowsRE       *regexp.Regexp
	coldTools    int
	peerTools    int
	payload      int
	deltas       int
	memoryCalls  int
	memorySettle time.Duration
	memoryBeat   time.Duration
	asJSON       bool
	targets      targetPolicy
	// flood and floodTimeout make the flood row: that many calls fired
	// at once, each with that timeout (0 calls: skip it), to show that
	// under a flood every call still ends with a true outcome.
	flood        int
	floodTimeout time.Duration

	levels, cliLevels, bigLevels, gatewayLevels []int

	// fleetWorkers, fleetSlots and fleetWork shape the fleet rows
	// (fleet.go; 0 workers: skip them).
	fleetWorkers, fleetSlots int
	fleetWork                time.Duration

	// peer and peerMode make this process one side of the memory row
	// (hidden flags: the bench re-executes its own binary with them).
	peer, peerMode string
}

// targetPolicy says what a missed target does to the exit code.
type targetPolicy string

const (
	// targetsReport prints whether each target was met and exits 0.
	targetsReport targetPolicy = "report"
	// targetsEnforce exits with tool_failed when any target was missed.
	targetsEnforce targetPolicy = "enforce"
)

// Command is `toolmesh bench`: its flags, and a run that takes what it
// needs of the toolmesh command from envOf, called once the command line
// is parsed (so the global flags and the logger are set by then).
func Command(envOf func() *Env) *cobra.Command {
	o := &benchOptions{}
	cmd := usage.Command("bench", "Measure the mesh against raw NATS, the nats.go micro peer and os/exec on the same server, side by side",
		func(cmd *cobra.Command) error {
			env := envOf()
			if o.peer == peerMCP {
				return runMCPPeer(cmd.Context(), env, o)
			}
			if o.peer == peerEcho {
				return runEchoPeer(cmd.Context(), env)
			}
			if o.peer != "" {
				return runBenchPeer(cmd.Context(), env, o)
			}
			if err := o.validate(); err != nil {
				return err
			}
			return runBench(cmd.Context(), cmd, env, o)
		})
	cmd.Long = `Measure unary calls at each --concurrency, one streamed call of --deltas events, a call
nobody answers and a CLI-bound /bin/true at each --cli-concurrency, each beside its raw
peer (nats.go request/reply, a nats.go micro endpoint, publish→subscribe, os/exec) on the
same server in the same run, in interleaved rounds, and print the median ratios with
their spread and each row's target: the bound within which the mesh's own cost beside
its raw peer is worth what the mesh adds. Then --memory-calls calls held in flight at
once, worker and caller each in a process of their own, for heap and RSS per call.
Runs against an embedded server unless --server or $NATS_URL names one; it hosts its
own tools under a private subject prefix, so a live mesh is not disturbed.`
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", 2*time.Second, "measuring time per side and scenario")
	f.IntVar(&o.rounds, "rounds", 6, "interleaved rounds per scenario; ratios are the median over rounds")
	f.StringVar(&o.concurrency, "concurrency", "1,16,256", "comma-separated numbers of unary calls kept in flight")
	f.StringVar(&o.cliFlight, "cli-concurrency", "1,8", "comma-separated numbers of CLI-bound /bin/true calls kept in flight (\"none\": skip)")
	f.StringVar(&o.bigResults, "big-results", "10,50", "comma-separated sizes in MiB of the large-result rows (\"none\": skip)")
	f.StringVar(&o.gatewayFlt, "gateway-concurrency", "1,64", "comma-separated numbers of MCP calls kept in flight through `toolmesh mcp` and to a go-sdk server (\"none\": skip)")
	f.StringVar(&o.rows, "rows", "", "a regular expression: run only the ratio rows whose name it matches (e.g. 'mcp gateway'); the flood and memory rows follow their own flags")
	f.IntVar(&o.coldTools, "cold-tools", 1000, "tools on the mesh and on the go-sdk server for the MCP cold-start row (0: skip it)")
	f.IntVar(&o.fleetWorkers, "fleet-workers", 8, "workers of the fleet rows, each beside a raw responder (0: skip them)")
	f.IntVar(&o.fleetSlots, "fleet-slots", 4, "handlers each fleet worker runs at once; the rows keep workers × slots calls in flight")
	f.DurationVar(&o.fleetWork, "fleet-work", 5*time.Millisecond, "how long each fleet handler waits")
	f.IntVar(&o.payload, "payload", 16, "bytes of the message each unary call echoes")
	f.IntVar(&o.deltas, "deltas", 1000, "events in the streamed call")
	f.IntVar(&o.memoryCalls, "memory-calls", 100000, "calls held in flight at once for the memory row (0: skip it)")
	f.DurationVar(&o.memorySettle, "memory-settle", 10*time.Second, "how long the memory row waits after the burst for the worker's goroutines to return to their baseline before reading its RSS")
	f.DurationVar(&o.memoryBeat, "memory-heartbeat", 0, "heartbeat interval the memory row's caller asks for (0: the caller's default); with per-call heartbeats a longer one lightens the burst")
	f.IntVar(&o.flood, "flood", 2000, "calls fired at once at a CLI-bound /bin/true for the flood row, through the mesh and through raw request/reply, counted by outcome (0: skip it)")
	f.DurationVar(&o.floodTimeout, "flood-timeout", 5*time.Second, "the timeout of each call of the flood row, on both sides")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.StringVar((*string)(&o.targets), "targets", string(targetsReport), "report: print whether each target was met; enforce: also exit non-zero when one was missed")
	f.StringVar(&o.peer, "peer", "", "internal: serve as the memory row's worker or caller process")
	f.StringVar(&o.peerMode, "peer-mode", "", "internal: toolmesh or raw")
	f.IntVar(&o.peerTools, "peer-tools", 0, "internal: tools the MCP peer serves besides echo")
	_ = f.MarkHidden("peer-tools")
	_ = f.MarkHidden("peer")
	_ = f.MarkHidden("peer-mode")
	return cmd
}

func (o *benchOptions) validate() error {
	var err error
	if o.levels, err = parseConcurrency("concurrency", o.concurrency); err != nil {
		return err
	}
	if o.rows != "" {
		if o.rowsRE, err = regexp.Compile(o.rows); err != nil {
			return envelope.Problemf(envelope.CodeInvalidInput, "--rows: %v", err).
				WithFix("Give a Go regular expression, for example --rows 'mcp gateway'.", envelope.MaybeIncorrect)
		}
	}
	if o.bigResults != "none" {
		if o.bigLevels, err = parseConcurrency("big-results", o.bigResults); err != nil {
			return err
		}
	}
	if o.gatewayFlt != "none" {
		if o.gatewayLevels, err = parseConcurrency("gateway-concurrency", o.gatewayFlt); err != nil {
			return err
		}
	}
	if o.cliFlight != "none" {
		if o.cliLevels, err = parseConcurrency("cli-concurrency", o.cliFlight); err != nil {
			return err
		}
	}
	if o.duration <= 0 || o.rounds < 1 || o.payload < 0 || o.deltas < 1 || o.memoryCalls < 0 || o.memorySettle < 0 || o.memoryBeat < 0 ||
		o.coldTools < 0 || o.flood < 0 || o.floodTimeout <= 0 || o.fleetWorkers < 0 || o.fleetSlots < 1 || o.fleetWork <= 0 {
		return envelope.NewProblem(envelope.CodeInvalidInput, "--duration and --flood-timeout must be positive, --rounds and --deltas at least 1, --payload, --memory-calls, --memory-settle, --memory-heartbeat, --cold-tools, --flood and --fleet-workers at least 0, --fleet-slots at least 1 and --fleet-work positive")
	}
	if o.targets != targetsReport && o.targets != targetsEnforce {
		return usage.FlagValueProblem("targets", string(o.targets), string(targetsReport), string(targetsEnforce))
	}
	return nil
}

// runBench runs every scenario, then the memory row, prints the report and
// says whether it can be trusted (and, with --targets enforce, met).
func runBench(ctx context.Context, cmd *cobra.Command, env *Env, o *benchOptions) error {
	srv, err := benchServer(ctx, cmd, env)
	if err != nil {
		return err
	}
	defer srv.shutdown()
	b, err := newBencher(ctx, srv.dial, srv.url, o, env)
	if err != nil {
		return err
	}
	if srv.embedded && b.durable != nil && (o.rowsRE == nil || o.rowsRE.MatchString(durableRowName+durableR3Suffix)) {
		b.startDurableR3(ctx, b.prefix, slices.Max(o.levels), env)
	}
	report := benchReport{Server: srv.name, Duration: o.duration.String(), Rounds: o.rounds}
	for _, s := range benchScenarios(o, b.sandboxed, b.durable != nil, b.durableR3 != nil) {
		if o.rowsRE != nil && !o.rowsRE.MatchString(s.name) {
			continue
		}
		report.Results = append(report.Results, b.run(ctx, s, o))
	}
	if o.flood > 0 && ctx.Err() == nil {
		if report.Flood, err = b.floodRow(ctx, o.flood, o.floodTimeout); err != nil {
			b.close()
			return err
		}
	}
	b.close()
	if o.memoryCalls > 0 && ctx.Err() == nil {
		report.Results = append(report.Results, memoryRow(ctx, env, srv.url, o))
	}
	if ctx.Err() != nil {
		return envelope.NewProblem(envelope.CodeCancelled, "bench interrupted")
	}
	printBench(env, report, o.asJSON)
	if err := report.failures(); err != nil {
		return err
	}
	if o.targets == targetsEnforce {
		return report.missed()
	}
	return nil
}

// benchHost is the server the bench runs against.
type benchHost struct {
	dial func(string) (*nats.Conn, error)
	name string // for the report (no password)
	// embedded says the bench started the server itself: then it may
	// start a cluster of its own for the R3 rows.
	embedded bool
	url      string // for the memory row's processes
	shutdown func()
}

// benchServer chooses the server: an embedded one unless --server or
// $NATS_URL names one.
func benchServer(ctx context.Context, cmd *cobra.Command, env *Env) (benchHost, error) {
	if cmd.Flags().Changed("server") || os.Getenv("NATS_URL") != "" {
		dial := func(name string) (*nats.Conn, error) { return env.Dial(ctx, name) }
		url := env.Connect.URLOrDefault()
		return benchHost{dial: dial, name: redact.ServerURLs(url), url: url, shutdown: func() {}}, nil
	}
	srv, err := embedded.Start(ctx, embedded.Config{})
	if err != nil {
		return benchHost{}, envelope.Problemf(envelope.CodeInternal, "cannot start the embedded NATS server: %v", err)
	}
	dial := func(string) (*nats.Conn, error) {
		nc, err := srv.Connect()
		if err != nil {
			return nil, envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
		}
		return nc, nil
	}
	return benchHost{dial: dial, name: "embedded", embedded: true, url: srv.ClientURL(),
		shutdown: func() { _ = srv.Shutdown(context.Background()) }}, nil
}

func parseConcurrency(flag, s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, envelope.Problemf(envelope.CodeInvalidInput, "--%s: want positive integers separated by commas, got %q", flag, s).
				WithFix("For example --"+flag+" 1,16,256.", envelope.MachineApplicable)
		}
		out = append(out, n)
	}
	return out, nil
}
