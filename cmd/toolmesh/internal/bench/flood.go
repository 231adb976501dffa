package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// floodCounts is one side of the flood row: how the calls of a burst
// fired all at once at a CLI-bound program ended, by outcome. It shows
// that under a flood every call through the mesh still ends with a true
// outcome, which raw request/reply cannot tell.
type floodCounts struct {
	Side     string         `json:"side"`
	Calls    int            `json:"calls"`
	Timeout  string         `json:"timeout"`
	Outcomes map[string]int `json:"outcomes"`
}

// floodProgramSlots is how many runs of the program each side allows at
// once: the tools file's default max_concurrent, which the mesh's "true"
// tool has.
const floodProgramSlots = 8

// floodRow fires n calls at once at /bin/true through the mesh (the
// CLI-bound tool "true") and through raw nats.go request/reply to a
// responder that runs the same program floodProgramSlots at a time, each
// call with the same timeout, and counts every outcome: the mesh says for
// each failure whether the program ran; a raw timeout cannot say.
func (b *bencher) floodRow(ctx context.Context, n int, timeout time.Duration) ([]floodCounts, error) {
	sub, err := b.serveRawProgram()
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	w, err := b.serveFloodTool()
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	mesh := b.burst(n, func() string {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := b.c.Call(cctx, floodTool, nil, caller.WithRetries(0))
		if err == nil {
			return "ok"
		}
		p := envelope.AsProblem(err, envelope.CodeInternal)
		if r := p.Ran(); r != "" {
			return fmt.Sprintf("%s (ran: %s)", p.Code, r)
		}
		return string(p.Code)
	})
	raw := b.burst(n, func() string {
		_, err := b.raw.Request(b.rawSubject+".true", nil, timeout)
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, nats.ErrTimeout):
			return "timeout (ran: unknown)"
		case errors.Is(err, nats.ErrNoResponders):
			return "no responders"
		}
		return "error (ran: unknown)"
	})
	return []floodCounts{
		{Side: "toolmesh", Calls: n, Timeout: timeout.String(), Outcomes: mesh},
		{Side: "raw", Calls: n, Timeout: timeout.String(), Outcomes: raw},
	}, nil
}

// floodTool is the flood row's CLI-bound /bin/true.
const floodTool = "flood.true"

// serveFloodTool hosts floodTool on a worker of its own with the default
// admission limits (the other rows' worker is sized to their in-flight
// levels), on the raw responder's connection.
func (b *bencher) serveFloodTool() (*worker.Worker, error) {
	w, err := worker.New(b.conns[0], worker.Config{Prefix: b.prefix, Logger: b.log, Description: "toolmesh bench flood row"})
	if err != nil {
		return nil, envelope.NewProblem(envelope.CodeInternal, err.Error())
	}
	tools := fmt.Appendf(nil, "tools:\n  - name: %s\n    binding:\n      cli:\n        cmd: %s\n        output_format: lines\n", floodTool, strconv.Quote(b.trueBin))
	file, err := cli.Parse(tools)
	if err == nil {
		err = cli.RegisterFile(w, file, b.log)
	}
	if err != nil {
		w.Stop()
		return nil, envelope.AsProblem(err, envelope.CodeInternal)
	}
	return w, nil
}

// serveRawProgram is the raw side's responder: each request runs the
// program, floodProgramSlots at a time, and is answered when it exits.
func (b *bencher) serveRawProgram() (*nats.Subscription, error) {
	serve := b.conns[0]
	slots := make(chan struct{}, floodProgramSlots)
	sub, err := serve.QueueSubscribe(b.rawSubject+".true", "q", func(m *nats.Msg) {
		go func() {
			slots <- struct{}{}
			err := exec.Command(b.trueBin).Run()
			<-slots
			if err == nil {
				_ = m.Respond([]byte("{}"))
			}
		}()
	})
	if err != nil {
		return nil, envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	_ = sub.SetPendingLimits(-1, -1)
	return sub, serve.Flush()
}

// burst runs call n times at once and counts what each returned.
func (b *bencher) burst(n int, call func() string) map[string]int {
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := call()
			mu.Lock()
			counts[o]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return counts
}

// printFlood prints the flood row's counts, one line per side.
func printFlood(env *Env, rows []floodCounts) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(env.Stdout, "\nflood: %d calls fired at once at a CLI-bound /bin/true (%d runs at a time), timeout %s each\n", rows[0].Calls, floodProgramSlots, rows[0].Timeout)
	for _, r := range rows {
		keys := make([]string, 0, len(r.Outcomes))
		for k := range r.Outcomes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, r.Outcomes[k])
		}
		fmt.Fprintf(env.Stdout, "  %-8s  %s\n", r.Side, strings.Join(parts, ", "))
	}
	fmt.Fprintln(env.Stdout, "each failure through the mesh says whether the program ran (ran: no, maybe, yes); a raw request/reply failure cannot (ran: unknown).")
}
