package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/otlp"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/tasks"
)

// callFlags are what `toolmesh call`'s flags set.
type callFlags struct {
	args, bearer        string
	stream, dryRun, all bool
	timeout             time.Duration
	answers             []string
	durable             durableFlags
}

func newCallCmd(g *globals) *cobra.Command {
	var cf callFlags
	cmd := &cobra.Command{
		Use:   "call TOOL",
		Short: "Call a tool and print its Response (or, with --stream, its events as NDJSON)",
		Long: `Call a tool. Arguments come from --args (JSON, or @file), else from stdin when it is
not a terminal, else {}. Stdout gets the Response JSON: {"id":…,"success":…, …}.
With --stream, stdout gets every event as one JSON line, ending with the result or error.
A tool may ask a question mid-call (a confirmation, a choice): on a terminal, call shows it
and a small form; otherwise --answer JSON answers it (repeat for several questions, or
--answer decline), and without one the call ends with input_required saying what was asked.
Failures are also reported on stderr as a Problem, and the exit code is the Problem's.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := usage.OneArg("tool name", "Run `toolmesh call TOOL --args '{…}'`; list tools with `toolmesh tools list`.")(cmd, args); err != nil {
				return err
			}
			return checkToolName(args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCall(cmd, g, args[0], cf) },
	}
	f := cmd.Flags()
	f.StringVar(&cf.args, "args", "", "arguments as a JSON object, or @file to read them from a file")
	f.BoolVar(&cf.stream, "stream", false, "print every event as NDJSON instead of the final Response")
	f.BoolVar(&cf.dryRun, "dry-run", false, "ask the tool to report what it would do without doing it")
	f.BoolVar(&cf.all, "all", false, "gather every page (page.all, or walking next_cursor)")
	f.DurationVar(&cf.timeout, "timeout", 0, "budget for the call, e.g. 30s (default: none; a silent worker still ends the call)")
	f.StringVar(&cf.bearer, "bearer", "", "bearer token for the tool (default $TOOLMESH_BEARER)")
	f.StringArrayVar(&cf.answers, "answer", nil, "answer to the tool's next question: a JSON object, or decline or cancel (repeatable, used in order)")
	cf.durable.add(cmd)
	return cmd
}

// runCall makes the call the flags describe and prints its outcome.
func runCall(cmd *cobra.Command, g *globals, tool string, cf callFlags) error {
	ctx := cmd.Context()
	raw, err := g.callArgs(ctx, cf.args)
	if err != nil {
		return err
	}
	if cf.bearer == "" {
		cf.bearer = os.Getenv("TOOLMESH_BEARER")
	}
	shutdown := otlp.Setup(ctx, "toolmesh-call", g.log)
	defer shutdown()
	c, done, err := g.newCaller(cmd, "call")
	if err != nil {
		return err
	}
	defer done()
	opts := callOptions(cf.bearer, cf.dryRun, cf.timeout)
	if d := cf.durable; d.detach || d.durable {
		return callDurable(ctx, g, c, tool, raw, append(opts, d.options(cf.stream)...), d.detach)
	}
	gate := newSpinnerGate(g.stderr) // the progress display's, paused while a question asks
	asking, err := g.answerOptions(cf.answers, gate)
	if err != nil {
		return err
	}
	opts = append(opts, asking...)
	switch {
	case cf.all:
		resp, err := c.CallAll(ctx, tool, raw, opts...)
		return printResponse(g.stdout, resp, err)
	case cf.stream:
		return streamEvents(ctx, g, c, tool, raw, opts)
	case isTerminal(g.stderr):
		return callWithProgress(ctx, g, c, tool, raw, gate, opts)
	}
	resp, err := c.Call(ctx, tool, raw, opts...)
	return printResponse(g.stdout, resp, err)
}

// durableFlags are call's flags for durable calls (docs/protocol.md §22).
type durableFlags struct {
	detach, durable, idempotent bool
	idemKey                     string
}

func (d *durableFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&d.detach, "detach", false, "submit the call as a durable task and print its record (the task id) at once")
	f.BoolVar(&d.durable, "durable", false, "submit the call as a durable task, print its record, then follow its events as NDJSON")
	f.StringVar(&d.idemKey, "idempotency-key", "", "one task per key (and the task may re-run if its worker is lost)")
	f.BoolVar(&d.idempotent, "idempotent", false, "declare the tool safe to re-run if a durable task's worker is lost")
}

// options are the task options the flags ask for; a task followed or
// streamed records every event, a detached unary one only its terminal.
func (d *durableFlags) options(stream bool) []caller.Option {
	var opts []caller.Option
	if !stream && !d.durable {
		opts = append(opts, tasks.Unary())
	}
	if d.idemKey != "" {
		opts = append(opts, caller.WithIdempotencyKey(d.idemKey))
	}
	if d.idempotent {
		opts = append(opts, caller.Idempotent())
	}
	return opts
}

// callDurable submits a task, prints its record, and unless detached
// follows its events.
func callDurable(ctx context.Context, g *globals, c *caller.Caller, tool string, args json.RawMessage, opts []caller.Option, detach bool) error {
	rec, err := tasks.NewClient(c).SubmitRecord(ctx, tool, args, opts...)
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	if err := printJSON(g, rec); err != nil {
		return err
	}
	warnUnhosted(ctx, g, c, rec)
	if detach {
		return nil
	}
	return watchTask(ctx, g.stdout, c, rec.TaskID, 1)
}

// warnUnhosted says on stderr that a queued task's tool has no worker: the
// task is kept and waits for one, which a typo'd name would wait for in
// vain until its deadline.
func warnUnhosted(ctx context.Context, g *globals, c *caller.Caller, rec tasks.Record) {
	if rec.State != tasks.Queued {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := c.Catalog().Describe(dctx, rec.Tool)
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeToolNotFound {
		return
	}
	fmt.Fprintf(g.stderr, "toolmesh: no worker hosts tool %s now; task %s stays queued until one does (deadline %s). "+
		"Check the name with `toolmesh tools list`; drop the task with `toolmesh tasks cancel %s`.\n",
		rec.Tool, rec.TaskID, rec.Deadline, rec.TaskID)
}

// callOptions are the call options the flags ask for.
func callOptions(bearer string, dryRun bool, timeout time.Duration) []caller.Option {
	var opts []caller.Option
	if bearer != "" {
		opts = append(opts, caller.WithBearer(bearer))
	}
	if dryRun {
		opts = append(opts, caller.DryRun())
	}
	if timeout > 0 {
		opts = append(opts, caller.WithTimeout(timeout))
	}
	return opts
}

// callArgs reads the call's args, saying at debug level when stdin may be
// read (a script that hangs can see why).
func (g *globals) callArgs(ctx context.Context, flag string) (json.RawMessage, error) {
	if flag == "" {
		g.log.Debug("no --args: reading args from stdin unless it is a terminal")
	}
	return readArgs(ctx, flag, g.stdin)
}

// readArgs takes --args JSON or @file, else stdin when it is not a
// terminal, else {}. Stdin is never touched when --args is given, and a
// signal (ctx) interrupts a read from a pipe that is never closed.
func readArgs(ctx context.Context, flag string, stdin io.Reader) (json.RawMessage, error) {
	var raw []byte
	var from string
	switch {
	case strings.HasPrefix(flag, "@"):
		from = flag[1:]
		b, err := os.ReadFile(from)
		if err != nil {
			return nil, envelope.Problemf(envelope.CodeInvalidInput, "--args %s: %v", flag, err).
				WithFix(fmt.Sprintf("Check the path after @ (%q, relative to the current directory), or pass the JSON itself: --args '{…}'.", from), envelope.HasPlaceholders)
		}
		raw = b
	case flag != "":
		from, raw = "--args", []byte(flag)
	default:
		if f, ok := stdin.(*os.File); !ok || isTerminal(f) || stdin == nil {
			return json.RawMessage(`{}`), nil
		}
		b, err := readStdin(ctx, stdin)
		if ctx.Err() != nil {
			return nil, envelope.NewProblem(envelope.CodeCancelled, "interrupted while reading args from stdin (pass --args, or close stdin)")
		}
		if err != nil {
			return nil, envelope.Problemf(envelope.CodeInvalidInput, "reading args from stdin: %v", err)
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			return json.RawMessage(`{}`), nil
		}
		from, raw = "stdin", b
	}
	var probe any
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidInput, "args from %s are not valid JSON: %v", from, err).
			WithFix(`Pass a JSON object, e.g. --args '{"message":"hi"}'.`, envelope.HasPlaceholders)
	}
	if _, ok := probe.(map[string]any); !ok {
		return nil, envelope.Problemf(envelope.CodeInvalidInput, "args from %s must be a JSON object", from).
			WithFix(`Wrap the value in an object, e.g. --args '{"message":"hi"}'.`, envelope.HasPlaceholders)
	}
	return raw, nil
}

// printResponse writes the Response JSON to stdout and passes on the call's Problem.
func printResponse(stdout io.Writer, resp envelope.Response, callErr error) error {
	if resp.ID != "" || resp.Success {
		b, err := json.Marshal(resp)
		if err != nil {
			return envelope.NewProblem(envelope.CodeInternal, err.Error())
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	if callErr != nil {
		return fromCall{envelope.AsProblem(callErr, envelope.CodeInternal)}
	}
	return nil
}

// fromCall is a Problem the call itself ended with — the tool's, its
// worker's or the caller's — as opposed to a usage failure of the command:
// the command reports it as it came, its suggested fix included.
type fromCall struct{ p *envelope.Problem }

// Error returns the Problem's detail.
func (f fromCall) Error() string { return f.p.Error() }

// Unwrap gives the Problem to errors.As.
func (f fromCall) Unwrap() error { return f.p }

// streamEvents prints each event as one NDJSON line.
func streamEvents(ctx context.Context, g *globals, c *caller.Caller, tool string, args json.RawMessage, opts []caller.Option) error {
	s, err := c.Stream(ctx, tool, args, opts...)
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	defer s.Close()
	for ev := range s.Events() { // a failure is the terminal error event, printed like the rest
		b, err := json.Marshal(ev)
		if err != nil {
			return envelope.NewProblem(envelope.CodeInternal, err.Error())
		}
		fmt.Fprintf(g.stdout, "%s\n", b)
		if ev.Type == envelope.EventError {
			return fromCall{ev.Problem()}
		}
	}
	return nil
}

// callWithProgress streams the call so a terminal user sees progress and
// deltas on stderr while stdout still gets just the final Response. The
// display draws through gate, which a question's form pauses.
func callWithProgress(ctx context.Context, g *globals, c *caller.Caller, tool string, args json.RawMessage, gate *spinnerGate, opts []caller.Option) error {
	s, err := c.Stream(ctx, tool, args, opts...)
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	defer s.Close()
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(gate), progressbar.OptionSetDescription(tool),
		progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(50*time.Millisecond))
	bounded := false
	for ev := range s.Events() { // a failure is the terminal error event, handled below
		switch ev.Type {
		case envelope.EventProgress:
			if !bounded {
				bar.ChangeMax(100)
				bounded = true
			}
			if ev.Message != "" {
				bar.Describe(tool + ": " + ev.Message)
			}
			if ev.Pct != nil {
				_ = bar.Set(int(*ev.Pct))
			}
		case envelope.EventQuestion:
			_ = bar.Clear() // the form takes the terminal (see answerOptions)
		case envelope.EventAnswered:
		case envelope.EventDelta:
			_ = bar.Clear()
			fmt.Fprintf(g.stderr, "%s\n", deltaText(ev.Data))
			_ = bar.RenderBlank()
		case envelope.EventResult, envelope.EventError:
			_ = bar.Finish()
			resp, rerr := envelope.ResponseFromEvent(s.CallID(), ev)
			if rerr != nil {
				return envelope.NewProblem(envelope.CodeInternal, rerr.Error())
			}
			var p error
			if prob := ev.Problem(); prob != nil {
				p = prob
			}
			return printResponse(g.stdout, resp, p)
		default:
			_ = bar.Add(1)
		}
	}
	return nil
}

// deltaText shows a delta as a human reads it: a line's text, else compact JSON.
func deltaText(data json.RawMessage) string {
	var line struct {
		Line *string `json:"line"`
	}
	if json.Unmarshal(data, &line) == nil && line.Line != nil {
		return *line.Line
	}
	return string(data)
}
