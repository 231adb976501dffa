package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/argtemplate"
	"github.com/toolmesh/toolmesh/internal/fairshare"
	"github.com/toolmesh/toolmesh/internal/redact"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/sandbox/report"
	"github.com/toolmesh/toolmesh/internal/supervise"
	"github.com/toolmesh/toolmesh/internal/workercall"
	"github.com/toolmesh/toolmesh/worker"
)

// stderrTail is how much of a program's stderr a Problem or result carries.
const stderrTail = 4 << 10

// toolHandler runs one CLI-bound tool. It is safe for concurrent use.
type toolHandler struct {
	spec    envelope.ToolSpec
	binding *cliBinding
	limits  toolLimits
	inherit []string
	slots   *fairshare.Semaphore // the tool's MaxConcurrent slots, shared by sender
	log     *slog.Logger
	sup     *supervise.Supervisor
	ownSup  bool          // sup is this Handler's own, closed by Close
	plan    *sandbox.Plan // the program's sandbox; nil: unconfined
	harden  argHardening  // argument rules checked before the program runs
	// secrets holds the binding's env values, redacted (with the call's
	// bearer) from everything a call reports.
	secrets *redact.Redactor
}

// newProbedHandler makes the handler of a tool whose spec has a CLI
// binding.
// inherit names the variables the program inherits from this process's
// environment (nil: PATH, HOME, LANG and TZ).
func newProbedHandler(t fileTool, inherit []string, log *slog.Logger) (*toolHandler, error) {
	if inherit == nil {
		inherit = defaultInheritedEnv()
	}
	if log == nil {
		log = slog.Default()
	}
	return newHandler(t, inherit, log, nil)
}

// newHandler is newProbedHandler with the host's sandbox support already
// probed (nil: probe when the tool has a sandbox).
func newHandler(t fileTool, inherit []string, log *slog.Logger, support *sandbox.Support) (*toolHandler, error) {
	if err := checkBinding(t); err != nil {
		return nil, err
	}
	plan, err := prepareSandbox(t, support, log)
	if err != nil {
		return nil, err
	}
	binding := *t.Binding
	binding.ArgsTemplate = t.Hardening.template(binding.ArgsTemplate)
	spec := t.Spec
	spec.Sandbox = &envelope.SandboxSummary{Confined: false, Network: "any"} // says so rather than nothing
	if plan != nil {
		spec.Sandbox = report.Summary(plan.Policy)
	}
	lim := t.Limits.withDefaults(toolLimits{Timeout: time.Duration(t.Spec.Timeout)})
	h := &toolHandler{spec: spec, binding: &binding, limits: lim, inherit: inherit,
		slots: fairshare.New(lim.MaxConcurrent, queuePerSender(lim.MaxConcurrent)), log: log,
		sup: supervise.NewSupervisor(lim.KillGrace), ownSup: true, plan: plan, harden: t.Hardening,
		secrets: envSecrets(binding.Env)}
	if plan != nil {
	}
	return h, nil
}

// envSecrets is the Redactor of a binding's env values (see
// redact.Values); the bearer placeholder is not one, the bearer it stands
// for is added per call.
func envSecrets(env map[string]string) *redact.Redactor {
	values := make(map[string]string, len(env))
	for k, v := range env {
		if v != argtemplate.BearerPlaceholder {
			values[k] = v
		}
	}
	return redact.New(redact.Values(values)...)
}

// checkBinding refuses, before anything is registered, a tool without a CLI
// binding, with an invalid spec, or whose program cannot be found: a worker
// must not advertise a tool every call of which would fail.
func checkBinding(t fileTool) error {
	if t.Binding == nil {
		return envelope.Problemf(envelope.CodeInvalidConfig, "tool %q: field binding.cli is required", t.Spec.Name)
	}
	if err := t.Binding.validate(); err != nil {
		return envelope.Problemf(envelope.CodeInvalidConfig, "tool %q: field binding.cli: %v", t.Spec.Name, err)
	}
	if err := t.Spec.Validate(); err != nil {
		return envelope.NewProblem(envelope.CodeInvalidConfig, err.Error())
	}
	return checkCmd(t.Spec.Name, t.Binding.Cmd)
}

// Spec is the tool's spec as the Handler serves it: with its sandbox
// summary when it is confined.
func (h *toolHandler) Spec() envelope.ToolSpec { return h.spec }

// Close releases what the Handler keeps between calls (its supervisor's
// sentinel process); a program still running is
// stopped as if the worker had died. Handlers made by RegisterFile share a
// supervisor per kill grace that lives as long as the process, which their
// Close leaves running.
func (h *toolHandler) Close() error {
	if !h.ownSup {
		return nil
	}
	return h.sup.Close()
}

// RegisterFile registers every tool of f on w, or none: it logs f's load
// warnings, makes every tool's Handler and checks every spec and name
// first, and when w then refuses one (a subscription the server's
// permissions deny, a worker draining) it unregisters the tools of f it
// had registered before returning the error. A worker thus never serves
// half a tools file.
func RegisterFile(w *worker.Worker, f *File, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	for _, warning := range f.warnings {
		log.Warn(warning)
	}
	handlers, err := fileHandlers(w, f, log)
	if err != nil {
		return err
	}
	for i, h := range handlers {
		// h.spec: the tool's spec with its sandbox summary.
		if err := w.Register(h.spec, h); err != nil {
			for _, done := range f.tools[:i] {
				w.Unregister(done.Spec.Name)
			}
			return err
		}
	}
	return nil
}

// fileHandlers makes the Handler of every tool of f, one supervisor per
// kill grace, after checking that no name repeats in f or is already
// registered on w and that every spec compiles.
func fileHandlers(w *worker.Worker, f *File, log *slog.Logger) ([]*toolHandler, error) {
	taken := map[string]bool{}
	for _, s := range w.Specs() {
		taken[s.Name] = true
	}
	sups := make(map[time.Duration]*supervise.Supervisor) // one sentinel per kill grace
	handlers := make([]*toolHandler, 0, len(f.tools))
	var support *sandbox.Support // probed once, for the first sandboxed tool
	for _, t := range f.tools {
		if taken[t.Spec.Name] {
			return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tool %q is defined twice (or already registered on this worker)", t.Spec.Name)
		}
		taken[t.Spec.Name] = true
		if _, _, err := t.Spec.Compile(); err != nil {
			return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tool %q: %v", t.Spec.Name, err)
		}
		if t.Sandbox == nil {
			log.Warn("tool runs unconfined, with the worker's own rights (give it a sandbox block)", "tool", t.Spec.Name)
		} else if support == nil {
			s := sandbox.Probe(context.Background())
			support = &s
		}
		t.AllowUnconfined = t.AllowUnconfined || f.AllowUnconfined
		h, err := newHandler(t, f.env, log, support)
		if err != nil {
			return nil, err
		}
		if sups[h.limits.KillGrace] == nil {
			sups[h.limits.KillGrace] = h.sup
		}
		h.sup, h.ownSup = sups[h.limits.KillGrace], false
		handlers = append(handlers, h)
	}
	return handlers, nil
}

// errOutputCap marks stdout passing the tool's MaxOutputBytes.
var errOutputCap = errors.New("output cap reached")

// cappedReader returns errOutputCap once more than max bytes were read.
type cappedReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errOutputCap
	}
	if rest := c.max - c.n; int64(len(p)) > rest+1 {
		p = p[:rest+1]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		n -= int(c.n - c.max)
		return n, errOutputCap
	}
	return n, err
}

// stderrHead is how much of the start of a long stderr is kept for
// telling why a confined program failed: runtimes name the cause first
// and then dump every thread ("fatal error: runtime: out of memory" above
// kilobytes of goroutine stacks), which pushes it out of the tail.
const stderrHead = 1 << 10

// tailBuffer keeps the last max bytes written to it; String hides the
// call's secrets. It holds more than it shows (redact.Redactor.Keep), so
// a secret or a URL's password straddling the cut is still seen whole,
// and String redacts before it cuts. It also keeps the first stderrHead
// bytes (Head).
type tailBuffer struct {
	buf    []byte
	head   []byte
	max    int
	lost   bool
	redact *redact.Redactor
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if keep := t.redact.Keep(stderrHead); len(t.head) < keep {
		t.head = append(t.head, p[:min(len(p), keep-len(t.head))]...)
	}
	t.buf = append(t.buf, p...)
	if keep := t.redact.Keep(t.max); len(t.buf) > keep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
		t.lost = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	s, cut := t.redact.Tail(string(t.buf), t.max)
	if cut {
		t.lost = true
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Head is the start of what was written, secrets hidden, when the tail
// (String) no longer holds it; "" when the tail holds everything.
func (t *tailBuffer) Head() string {
	if !t.lost {
		return ""
	}
	s, _ := t.redact.Head(string(t.head), stderrHead)
	return strings.ToValidUTF8(s, "\uFFFD")
}

// queuePerSender bounds the calls one sender may have waiting for a tool's
// slots: enough to keep every slot busy twice over, few enough that a
// flood is refused at once rather than held for minutes.
func queuePerSender(slots int) int { return 2 * slots }

// acquire takes one of the tool's slots in the sender's turn (see package
// fairshare): a sender with calls queued delays only its own calls, and
// one with its bound already waiting is refused overloaded, unrun.
func (h *toolHandler) acquire(ctx context.Context, req *worker.Request) error {
	call := workercall.Of(ctx, req.Identity)
	err := h.slots.Acquire(ctx, call.Sender(), call.WillWait)
	if errors.Is(err, fairshare.ErrQueueFull) {
		return envelope.Problemf(envelope.CodeOverloaded,
			"tool %s already has this sender's %d calls waiting for its %d slots; the program did not run",
			h.spec.Name, queuePerSender(h.limits.MaxConcurrent), h.limits.MaxConcurrent).
			WithRetryAfter(1).WithRan(envelope.RanNo)
	}
	if errors.Is(err, fairshare.ErrMustNotWait) { // the worker words its own refusal (workercall.Call.WillWait)
		return envelope.Problemf(envelope.CodeOverloaded,
			"tool %s has no free slot, and this call may not wait for one; the program did not run", h.spec.Name).
			WithRetryAfter(1).WithRan(envelope.RanNo)
	}
	return err
}

// admittedKey marks a handler context whose call holds one of the tool's
// slots already (Admit).
type admittedKey struct{}

// Admit takes one of the tool's slots for a call before the worker sends
// its start (the worker admits each call through a handler's Admit):
// start then means the program runs, not that it waits for a slot. Handle runs in the returned context and takes
// no second slot.
func (h *toolHandler) Admit(ctx context.Context, req *worker.Request) (context.Context, func(), error) {
	if err := h.acquire(ctx, req); err != nil {
		return nil, nil, err
	}
	return context.WithValue(ctx, admittedKey{}, true), h.slots.Release, nil
}

// Handle runs the program for one call.
func (h *toolHandler) Handle(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
	b := h.binding
	if req.DryRun && b.DryRunFlag == "" {
		return nil, notRun(envelope.Problemf(envelope.CodeDryRunUnsupported,
			"tool %s has no dry_run_flag, so a dry run is refused rather than run for real", h.spec.Name))
	}
	pageAll := false
	if req.Page != nil {
		if req.Page.Cursor != "" {
			return nil, notRun(envelope.Problemf(envelope.CodePaginationUnsupported, "tool %s is a command-line tool: it pages only with page.all, not by cursor", h.spec.Name))
		}
		if b.PageAllFlag == "" {
			return nil, notRun(envelope.Problemf(envelope.CodePaginationUnsupported,
				"tool %s has no page_all_flag, so page.all is refused rather than silently returning one page", h.spec.Name))
		}
		pageAll = true
	}
	if admitted, _ := ctx.Value(admittedKey{}).(bool); !admitted {
		if err := h.acquire(ctx, req); err != nil {
			return nil, err
		}
		defer h.slots.Release()
	}
	if h.limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.limits.Timeout)
		defer cancel()
	}
	args, err := h.harden.apply(h.spec.Name, req.Args)
	if err != nil {
		return nil, notRun(err)
	}
	argv := buildArgv(b, h.spec.Name, args, req.DryRun, pageAll)
	secrets := h.secrets.With(req.Bearer)
	res, err := h.run(ctx, argv, childEnv(os.Environ(), h.inherit, b.Env, req.Bearer), stdinFor(b, args), secrets, streamer{emit, req.Streaming})
	// A program that prints its token or an env value must not leak it, or
	// any piece of it, into errors (detail, stderr tails, output excerpts);
	// tails and excerpts are redacted before they are cut, where they are
	// built.
	return res, secrets.ProblemOf(err)
}

// notRun marks a refusal made before the program started: the call's
// Problem says ran "no" (the worker would otherwise say "yes", because
// the Handler ran), so an agent knows a retry cannot do the work twice.
func notRun(err error) error {
	var p *envelope.Problem
	if errors.As(err, &p) {
		return p.WithRan(envelope.RanNo)
	}
	return err
}

// run starts argv in its own process group and turns its output and exit
// into the call's result or Problem. Whatever happens, no process of the
// group outlives the call.
//
// The calling goroutine forks and then waits for the program, so it is
// locked to its thread from spawn to reap (see supervise.Supervisor.Start);
// it never parks in between (a locked goroutine that parks costs a thread
// hand-off each time), and no goroutine hop delays the fork: other
// goroutines read stdout and stderr, and stopping rides on
// context.AfterFunc and a timer rather than a watching goroutine.
func (h *toolHandler) run(ctx context.Context, argv []string, env []string, stdinData []byte, secrets *redact.Redactor, emit streamer) (any, error) {
	p, err := h.spawn(argv, env, stdinData)
	if err != nil {
		return nil, err
	}
	defer p.feed.close()
	grace := h.limits.KillGrace
	dontStop := context.AfterFunc(ctx, func() { p.stop(grace) }) // cancel, timeout, caller loss
	stderr := &tailBuffer{max: stderrTail, redact: secrets}
	stderrDone := make(chan struct{})
	go func() {
		_, _ = io.CopyBuffer(stderr, readerOnly{p.stderr}, make([]byte, 4<<10))
		close(stderrDone)
	}()
	var parsed output
	var readErr error
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		parsed, readErr = h.readOutput(&cappedReader{r: p.stdout, max: h.limits.MaxOutputBytes}, emit, secrets)
		if readErr != nil {
			p.stop(grace) // nobody reads any more: stop the program
		}
		// Drain what is left so a program blocked on a full pipe can exit.
		_, _ = io.Copy(io.Discard, p.stdout)
	}()
	waitErr := p.reap()
	dontStop()
	<-readDone
	p.stdout.Close()
	<-stderrDone
	p.stderr.Close()
	return h.outcome(ctx, parsed, readErr, waitErr, stderr)
}

// readerOnly hides a reader's WriteTo, which for an *os.File copies
// through a fresh 32 KiB buffer: with a small buffer of its own, a call's
// usually short stderr costs one small allocation.
type readerOnly struct{ io.Reader }

// process is a started program: its group, its output pipes and its stdin.
type process struct {
	wait           func() error // waits for the program
	sweep          bool         // reap sweeps the group
	release        func()       // tells the supervisor the group is gone
	stdout, stderr *os.File
	feed           *stdinFeed
	pgid           int // 0: the program never ran

	mu       sync.Mutex
	reaped   bool        // the group was swept: it must not be signalled again
	stopping bool        // stop was called
	kill     *time.Timer // SIGKILL after the grace, once stopping
}

// spawn starts argv with env and its stdin, in a process group of its own,
// under the Handler's supervisor: on success the calling goroutine is
// locked to its thread until it calls reap. A confined program's group
// leader is its sandbox helper (startConfined).
func (h *toolHandler) spawn(argv []string, env []string, stdinData []byte) (*process, error) {
	stdoutR, stdoutW, err := supervise.OutputPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	stderrR, stderrW, err := supervise.OutputPipe()
	if err != nil {
		supervise.CloseAll(stdoutR, stdoutW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	feed, err := newStdinFeed(stdinData)
	if err != nil {
		supervise.CloseAll(stdoutR, stdoutW, stderrR, stderrW)
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	p := &process{stdout: stdoutR, stderr: stderrR, feed: feed}
	if h.plan != nil {
		err = h.startConfined(p, argv, env, stdoutW, stderrW)
	} else {
		err = h.startPlain(p, argv, env, stdoutW, stderrW)
	}
	supervise.CloseAll(stdoutW, stderrW)
	if err != nil {
		feed.close()
		supervise.CloseAll(stdoutR, stderrR)
		return nil, err
	}
	feed.start()
	return p, nil
}

// startPlain starts argv itself under the supervisor.
func (h *toolHandler) startPlain(p *process, argv, env []string, stdout, stderr *os.File) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return envelope.Problemf(envelope.CodeToolFailed, "tool %s: cannot start %q: %v", h.spec.Name, argv[0], err)
	}
	cmd := &exec.Cmd{Path: path, Args: append([]string{path}, argv[1:]...), Env: env, Stdout: stdout, Stderr: stderr}
	if r := p.feed.reader(); r != nil {
		cmd.Stdin = r
	}
	if err := h.sup.Start(cmd); err != nil {
		return envelope.Problemf(envelope.CodeToolFailed, "tool %s: cannot start %q: %v", h.spec.Name, argv[0], err)
	}
	p.pgid, p.wait, p.sweep = cmd.Process.Pid, cmd.Wait, true
	p.release = func() { h.sup.Release(p.pgid) }
	return nil
}

// startConfined starts argv confined under the supervisor: the sandbox
// helper is the group's leader and the init of the program's PID
// namespace, so sweeping the group ends every process the call started,
// however it detached.
func (h *toolHandler) startConfined(p *process, argv, env []string, stdout, stderr *os.File) error {
	c, err := h.plan.Command(argv[1:], env)
	if err != nil {
		return envelope.Problemf(envelope.CodeToolFailed, "tool %s: cannot start %q in its sandbox: %v", h.spec.Name, argv[0], err)
	}
	cmd := c.Cmd
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if r := p.feed.reader(); r != nil {
		cmd.Stdin = r
	}
	err = h.sup.Start(cmd)
	c.Started()
	if err != nil {
		c.Close()
		return envelope.Problemf(envelope.CodeToolFailed, "tool %s: cannot start %q in its sandbox: %v", h.spec.Name, argv[0], err)
	}
	p.pgid, p.sweep = cmd.Process.Pid, true
	p.release = func() { h.sup.Release(p.pgid) }
	p.wait = func() error {
		end, err := c.Wait()
		if err != nil {
			return err
		}
		if end.Status != 0 {
			return &sandbox.ExitError{Exit: *end}
		}
		return nil
	}
	return nil
}

// stop stops the whole group (cancel, timeout, caller loss, output cap):
// SIGTERM, then SIGKILL after grace. Only the first call acts.
func (p *process) stop(grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped || p.stopping {
		return
	}
	p.stopping = true
	if p.pgid > 0 {
		_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	}
	p.kill = time.AfterFunc(grace, func() { p.signal(syscall.SIGKILL) })
}

// signal sends sig to the group unless it was already swept.
func (p *process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped && p.pgid > 0 {
		_ = syscall.Kill(-p.pgid, sig)
	}
}

// reap waits for the program; when it exits, its group is swept at once
// (a grandchild must not outlive the call, nor keep stdout open and stall
// the read), nothing signals it any more, and the supervisor is told it is
// gone, which unlocks a plainly started program's goroutine from its
// thread.
func (p *process) reap() error {
	err := p.wait()
	p.mu.Lock()
	p.reaped = true
	if p.sweep && p.pgid > 0 {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	}
	if p.kill != nil {
		p.kill.Stop()
	}
	p.mu.Unlock()
	p.release()
	return err
}

// outcome is the call's answer once the program and its pipes are done.
func (h *toolHandler) outcome(ctx context.Context, parsed output, readErr, waitErr error, stderr *tailBuffer) (any, error) {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, envelope.Problemf(envelope.CodeTimeout, "tool %s ran out of time and was stopped", h.spec.Name).
				WithExtension("stderr_tail", stderr.String())
		}
		return nil, err
	}
	if errors.Is(readErr, errOutputCap) {
		return h.cappedResult(parsed, stderr)
	}
	if readErr != nil {
		return nil, readErr
	}
	if code := exitCode(waitErr); code != 0 {
		if p := h.sandboxProblem(waitErr, code, stderr); p != nil {
			return nil, p
		}
		return h.exitResult(code, waitErr, parsed, stderr)
	}
	return h.finalResult(parsed, stderr)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee interface{ ExitCode() int } // *exec.ExitError, *sandbox.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return ee.ExitCode()
	}
	return -1 // killed by a signal
}

// streamer is the call's Emitter and whether the caller reads the
// stream: a streamed lines/ndjson call gets its output once, as deltas,
// and a result that counts them instead of repeating them.
type streamer struct {
	worker.Emitter
	streaming bool
}

// output is what readOutput gathered.
type output struct {
	secrets  *redact.Redactor  // redacted from excerpts before they are cut
	raw      []byte            // json: all of stdout
	items    []json.RawMessage // ndjson (unary mode)
	lines    []string          // lines (unary mode)
	streamed int               // lines or items sent as deltas (stream mode)
}

// readOutput reads stdout per the binding's format, streaming deltas as
// lines arrive (ndjson and lines) rather than after the program exits.
func (h *toolHandler) readOutput(r io.Reader, emit streamer, secrets *redact.Redactor) (output, error) {
	o := output{secrets: secrets}
	switch outputFormat(h.binding) {
	case outputJSON:
		raw, err := io.ReadAll(r)
		o.raw = raw
		return o, err
	}
	br := bufio.NewReaderSize(r, 8<<10) // longer lines are gathered in pieces
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 || (err == nil) {
			if perr := h.takeLine(&o, line, emit); perr != nil {
				return o, perr
			}
		}
		if err == io.EOF {
			return o, nil
		}
		if err != nil {
			return o, err
		}
	}
}

func (h *toolHandler) takeLine(o *output, line []byte, emit streamer) error {
	if outputFormat(h.binding) == outputNDJSON {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		if !json.Valid(line) {
			return envelope.Problemf(envelope.CodeToolFailed, "tool %s: output line %d is not JSON (ndjson): %s",
				h.spec.Name, len(o.items)+o.streamed+1, excerpt(line, o.secrets))
		}
		item := json.RawMessage(append([]byte(nil), line...))
		if emit.streaming {
			o.streamed++
			return emitDelta(emit, item)
		}
		o.items = append(o.items, item)
		return nil
	}
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if emit.streaming {
		o.streamed++
		return emitDelta(emit, map[string]string{"line": s})
	}
	o.lines = append(o.lines, s)
	return nil
}

// emitDelta sends a delta; a failure to emit because the call ended is
// left to the context check that follows the run.
func emitDelta(emit worker.Emitter, v any) error {
	if err := emit.Delta(v); err != nil {
		var p *envelope.Problem
		if errors.As(err, &p) {
			return p
		}
	}
	return nil
}

// excerpt quotes the start of b: redacted first, then cut.
func excerpt(b []byte, secrets *redact.Redactor) string {
	const max = 200
	s, cut := secrets.Head(string(b), max)
	s = strings.ToValidUTF8(s, "\uFFFD")
	if cut {
		s += "…"
	}
	return fmt.Sprintf("%q", s)
}

func (h *toolHandler) finalResult(o output, stderr *tailBuffer) (any, error) {
	switch outputFormat(h.binding) {
	case outputNDJSON:
		if o.streamed > 0 {
			return map[string]any{"items_streamed": o.streamed}, nil
		}
		if o.items == nil {
			o.items = []json.RawMessage{}
		}
		return o.items, nil
	case outputLines:
		return h.linesResult(o, stderr, nil), nil
	}
	if len(bytes.TrimSpace(o.raw)) == 0 {
		return nil, envelope.Problemf(envelope.CodeToolFailed, "tool %s exited 0 but printed nothing; its output format is json", h.spec.Name).
			WithExtension("stderr_tail", stderr.String())
	}
	if !json.Valid(o.raw) {
		return nil, envelope.Problemf(envelope.CodeToolFailed, "tool %s printed output that is not valid JSON: %s", h.spec.Name, excerpt(o.raw, o.secrets)).
			WithExtension("stderr_tail", stderr.String())
	}
	return json.RawMessage(o.raw), nil
}

func (h *toolHandler) linesResult(o output, stderr *tailBuffer, warnings []string) map[string]any {
	if o.lines == nil {
		o.lines = []string{}
	}
	res := map[string]any{"lines": o.lines, "stderr": stderr.String()}
	if o.streamed > 0 {
		res = map[string]any{"lines_streamed": o.streamed, "stderr": stderr.String()}
	}
	if stderr.lost {
		res["stderr_truncated"] = true
	}
	if warnings != nil {
		res["complete"] = false
		res["scope_warnings"] = warnings
	}
	return res
}

// cappedResult ends a call whose program passed the output cap: lines can
// say honestly that they are partial; a single JSON document or an array
// cannot, so those end in payload_too_large (deltas already sent stand).
func (h *toolHandler) cappedResult(o output, stderr *tailBuffer) (any, error) {
	reason := fmt.Sprintf("output passed max_output_bytes (%d); the program was stopped and the rest of its output dropped", h.limits.MaxOutputBytes)
	if outputFormat(h.binding) == outputLines {
		return h.linesResult(o, stderr, []string{reason}), nil
	}
	p := envelope.Problemf(envelope.CodePayloadTooLarge, "tool %s: %s", h.spec.Name, reason)
	if outputFormat(h.binding) == outputNDJSON && o.streamed > 0 {
		p.WithExtension("items_delivered", o.streamed)
	}
	return nil, p
}
