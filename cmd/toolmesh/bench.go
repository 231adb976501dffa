package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// benchSide is what one side (raw NATS or toolmesh) did in one scenario.
type benchSide struct {
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	CallsPerSec float64 `json:"calls_per_sec"`
	P50Micros   float64 `json:"p50_us"`
	P99Micros   float64 `json:"p99_us"`
	FirstError  string  `json:"first_error,omitempty"`

	elapsed time.Duration
	lat     []time.Duration
}

// benchResult compares the two sides of one scenario.
type benchResult struct {
	Scenario string    `json:"scenario"`
	InFlight int       `json:"in_flight"`
	Raw      benchSide `json:"raw"`
	Toolmesh benchSide `json:"toolmesh"`
	// ThroughputRatio is toolmesh calls/s over raw calls/s (1 = as fast).
	ThroughputRatio float64 `json:"throughput_ratio"`
	// P50Ratio is toolmesh p50 latency over raw p50 latency (1 = as fast).
	P50Ratio float64 `json:"p50_ratio"`
}

type benchReport struct {
	Server   string        `json:"server"`
	Duration string        `json:"duration_per_side"`
	Results  []benchResult `json:"results"`
}

// benchRounds alternates the sides this many times per scenario, each
// going first in half of the rounds, so drift on a busy machine falls on
// both alike.
const benchRounds = 4

func newBenchCmd(g *globals) *cobra.Command {
	var (
		duration    time.Duration
		concurrency string
		payload     int
		deltas      int
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the mesh against raw NATS request/reply on the same server, side by side",
		Long: `Measure unary calls at each --concurrency and one streamed call of --deltas events,
each beside the raw nats.go equivalent on the same server in the same run, and print
the ratios. Runs against an embedded server unless --server or $NATS_URL names one;
it hosts its own tools under a private subject prefix, so a live mesh is not disturbed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			levels, err := parseConcurrency(concurrency)
			if err != nil {
				return err
			}
			if duration <= 0 || payload < 0 || deltas < 1 {
				return envelope.NewProblem(envelope.CodeInvalidInput, "--duration must be positive, --payload at least 0 and --deltas at least 1")
			}
			dial, server, shutdown, err := benchServer(ctx, cmd, g)
			if err != nil {
				return err
			}
			defer shutdown()
			b, err := newBencher(dial, slices.Max(levels), payload, deltas, g)
			if err != nil {
				return err
			}
			defer b.close()

			report := benchReport{Server: server, Duration: duration.String()}
			for _, n := range levels {
				r := b.compare(ctx, "unary", n, duration, b.rawUnary, b.meshUnary)
				report.Results = append(report.Results, r)
			}
			report.Results = append(report.Results,
				b.compare(ctx, fmt.Sprintf("stream of %d deltas", deltas), 1, duration, b.rawStream, b.meshStream))
			if ctx.Err() != nil {
				return envelope.NewProblem(envelope.CodeCancelled, "bench interrupted")
			}
			printBench(g, report, asJSON)
			return report.failures()
		},
	}
	f := cmd.Flags()
	f.DurationVar(&duration, "duration", 2*time.Second, "measuring time per side and scenario")
	f.StringVar(&concurrency, "concurrency", "1,256", "comma-separated numbers of unary calls kept in flight")
	f.IntVar(&payload, "payload", 16, "bytes of the message each unary call echoes")
	f.IntVar(&deltas, "deltas", 1000, "events in the streamed call")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// benchServer chooses the server: an embedded one unless --server or
// $NATS_URL names one. It returns how to dial it, its name for the report
// and what stops it.
func benchServer(ctx context.Context, cmd *cobra.Command, g *globals) (func(string) (*nats.Conn, error), string, func(), error) {
	if cmd.Flags().Changed("server") || os.Getenv("NATS_URL") != "" {
		dial := func(name string) (*nats.Conn, error) { return g.dial(ctx, name) }
		return dial, mesh.RedactURL(g.connect.URLOrDefault()), func() {}, nil
	}
	srv, err := embedded.Start(ctx, embedded.Config{})
	if err != nil {
		return nil, "", nil, envelope.Problemf(envelope.CodeInternal, "cannot start the embedded NATS server: %v", err)
	}
	dial := func(string) (*nats.Conn, error) {
		nc, err := srv.Connect()
		if err != nil {
			return nil, envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
		}
		return nc, nil
	}
	return dial, "embedded", func() { _ = srv.Shutdown(context.Background()) }, nil
}

// failures is the Problem of a run in which calls failed: its figures
// are not trustworthy.
func (report benchReport) failures() error {
	for _, r := range report.Results {
		for _, s := range []benchSide{r.Raw, r.Toolmesh} {
			if s.Errors > 0 {
				return envelope.Problemf(envelope.CodeToolFailed, "%s at %d in flight: %d of %d calls failed, first: %s; the figures above are not trustworthy",
					r.Scenario, r.InFlight, s.Errors, s.Calls+s.Errors, s.FirstError)
			}
		}
	}
	return nil
}

func parseConcurrency(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, envelope.Problemf(envelope.CodeInvalidInput, "--concurrency: want positive integers separated by commas, got %q", s).
				WithFix("For example --concurrency 1,16,256.", envelope.MachineApplicable)
		}
		out = append(out, n)
	}
	return out, nil
}

// bencher holds both sides: a raw responder and a toolmesh worker on one
// connection, a raw requester and a toolmesh caller on two others.
type bencher struct {
	conns      []*nats.Conn
	w          *worker.Worker
	c          *caller.Caller
	raw        *nats.Conn
	rawSubject string
	args       json.RawMessage
	deltas     int
}

func newBencher(dial func(string) (*nats.Conn, error), maxInFlight, payload, deltas int, g *globals) (*bencher, error) {
	b := &bencher{deltas: deltas}
	ok := false
	defer func() {
		if !ok {
			b.close()
		}
	}()
	for _, name := range []string{"bench responder", "bench raw", "bench caller"} {
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
	id := strings.ToLower(ulid.Make().String())
	prefix := g.prefix + "-bench-" + id
	b.rawSubject = prefix + ".raw"
	b.args, _ = json.Marshal(map[string]string{"message": strings.Repeat("x", payload)})

	if err := b.serveRaw(serve); err != nil {
		return nil, err
	}
	if err := b.serveMesh(serve, prefix, maxInFlight, g); err != nil {
		return nil, err
	}
	c, err := caller.New(call, caller.Config{Prefix: prefix, Logger: g.log})
	if err != nil {
		return nil, envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	b.c = c
	if err := serve.Flush(); err != nil {
		return nil, envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	ok = true
	return b, nil
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

// serveMesh hosts the toolmesh side: a worker with echo and count.
func (b *bencher) serveMesh(serve *nats.Conn, prefix string, maxInFlight int, g *globals) error {
	w, err := worker.New(serve, worker.Config{Prefix: prefix, Logger: g.log, MaxConcurrent: maxInFlight, Description: "toolmesh bench"})
	if err != nil {
		return envelope.NewProblem(envelope.CodeInternal, err.Error())
	}
	b.w = w
	deltas := b.deltas
	if err := w.Register(envelope.ToolSpec{Name: "echo"}, worker.HandlerFunc(
		func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) { return req.Args, nil })); err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	if err := w.Register(envelope.ToolSpec{Name: "count", Streaming: true}, worker.HandlerFunc(
		func(ctx context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
			for i := range deltas {
				if err := emit.Delta(json.RawMessage(append(strconv.AppendInt([]byte(`{"i":`), int64(i+1), 10), '}'))); err != nil {
					return nil, err
				}
			}
			return map[string]int{"count": deltas}, nil
		})); err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	return nil
}

func (b *bencher) close() {
	if b.c != nil {
		_ = b.c.Close()
	}
	if b.w != nil {
		b.w.Stop()
	}
	for _, nc := range b.conns {
		nc.Close()
	}
}

func (b *bencher) rawUnary(ctx context.Context) error {
	_, err := b.raw.RequestWithContext(ctx, b.rawSubject+".echo", b.args)
	return err
}

func (b *bencher) meshUnary(ctx context.Context) error {
	_, err := b.c.Call(ctx, "echo", b.args)
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

// compare runs both sides in alternating rounds and computes the ratios.
func (b *bencher) compare(ctx context.Context, scenario string, inFlight int, d time.Duration, raw, toolmesh func(context.Context) error) benchResult {
	r := benchResult{Scenario: scenario, InFlight: inFlight}
	slice := max(d/benchRounds, time.Millisecond)
	for round := range benchRounds {
		if round%2 == 0 {
			measure(ctx, &r.Raw, inFlight, slice, raw)
			measure(ctx, &r.Toolmesh, inFlight, slice, toolmesh)
		} else {
			measure(ctx, &r.Toolmesh, inFlight, slice, toolmesh)
			measure(ctx, &r.Raw, inFlight, slice, raw)
		}
	}
	r.Raw.finish()
	r.Toolmesh.finish()
	if r.Raw.CallsPerSec > 0 {
		r.ThroughputRatio = r.Toolmesh.CallsPerSec / r.Raw.CallsPerSec
	}
	if r.Raw.P50Micros > 0 {
		r.P50Ratio = r.Toolmesh.P50Micros / r.Raw.P50Micros
	}
	return r
}

// measure keeps inFlight calls going for d and adds what happened to s.
func measure(ctx context.Context, s *benchSide, inFlight int, d time.Duration, call func(context.Context) error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var errs int
			var firstErr error
			// At least one call each, however late the goroutine starts.
			for first := true; first || time.Now().Before(stop) && ctx.Err() == nil; first = false {
				t0 := time.Now()
				if err := call(ctx); err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			s.lat = append(s.lat, lat...)
			s.Errors += errs
			if firstErr != nil && s.FirstError == "" {
				s.FirstError = firstErr.Error()
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	s.elapsed += time.Since(start)
}

func (s *benchSide) finish() {
	s.Calls = len(s.lat)
	if s.elapsed > 0 {
		s.CallsPerSec = float64(s.Calls) / s.elapsed.Seconds()
	}
	if len(s.lat) == 0 {
		return
	}
	slices.Sort(s.lat)
	micros := func(q float64) float64 {
		return float64(s.lat[int(q*float64(len(s.lat)-1))]) / float64(time.Microsecond)
	}
	s.P50Micros, s.P99Micros = micros(0.50), micros(0.99)
}

func printBench(g *globals, r benchReport, asJSON bool) {
	if asJSON {
		out, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(g.stdout, string(out))
		return
	}
	fmt.Fprintf(g.stdout, "server: %s, %s per side and scenario, sides alternating\n\n", r.Server, r.Duration)
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tIN FLIGHT\tRAW CALLS/S\tTOOLMESH CALLS/S\tTHROUGHPUT RATIO\tRAW P50\tTOOLMESH P50\tP50 RATIO")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%.0fµs\t%.0fµs\t%.2f\n", x.Scenario, x.InFlight,
			x.Raw.CallsPerSec, x.Toolmesh.CallsPerSec, x.ThroughputRatio, x.Raw.P50Micros, x.Toolmesh.P50Micros, x.P50Ratio)
	}
	_ = tw.Flush()
	fmt.Fprintln(g.stdout, "\nratios are toolmesh over raw: throughput 1.00 = as many calls per second, p50 1.00 = as fast.")
}
