package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/workermw"
)

// newTasksCmd is `toolmesh tasks`: durable calls (docs/protocol.md §22).
func newTasksCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "tasks", Short: "Follow, read, cancel and list durable calls (tasks); run the task service"}
	cmd.AddCommand(newTasksWatchCmd(g), newTasksGetCmd(g), newTasksCancelCmd(g), newTasksAnswerCmd(g), newTasksLsCmd(g), newTasksServeCmd(g))
	return cmd
}

// oneTaskID checks that a command got exactly one task id.
func oneTaskID(cmd *cobra.Command, args []string) error {
	return usage.OneArg("task id", "Pass the id `toolmesh call --detach` printed; `toolmesh tasks ls` lists yours.")(cmd, args)
}

// taskIDCmd is a tasks subcommand over exactly one task id, run with a
// caller on the mesh.
func (g *globals) taskIDCmd(use, short string, run func(cmd *cobra.Command, c *caller.Caller, id string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  oneTaskID,
		RunE: g.withCaller("tasks", func(cmd *cobra.Command, c *caller.Caller, args []string) error {
			return run(cmd, c, args[0])
		}),
	}
}

func newTasksWatchCmd(g *globals) *cobra.Command {
	var from int
	cmd := g.taskIDCmd("watch TASK_ID", "Print every event of a task from the first, in order, then the live ones, as NDJSON",
		func(cmd *cobra.Command, c *caller.Caller, id string) error {
			return watchTask(cmd.Context(), g.stdout, c, id, from)
		})
	cmd.Flags().IntVar(&from, "from", 1, "the number of the first event to print")
	return cmd
}

// watchTask prints a task's events as NDJSON lines {"n","attempt","event"};
// the exit code is the terminal's.
func watchTask(ctx context.Context, out io.Writer, c *caller.Caller, id string, from int) error {
	ts, err := tasks.NewClient(c).Attach(ctx, id, from)
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	defer ts.Close()
	for {
		ev, err := ts.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return envelope.AsProblem(err, envelope.CodeInternal)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return envelope.NewProblem(envelope.CodeInternal, err.Error())
		}
		fmt.Fprintf(out, "%s\n", b)
		if ev.Event.Type == envelope.EventError {
			return ev.Event.Problem()
		}
	}
}

// printRecord prints a task's record as JSON, or fails with the task
// API's Problem.
func (g *globals) printRecord(rec tasks.Record, err error) error {
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeInternal)
	}
	return printJSON(g, rec)
}

func newTasksGetCmd(g *globals) *cobra.Command {
	var wait bool
	cmd := g.taskIDCmd("get TASK_ID", "Print a task's record as JSON, its terminal event included once it has ended",
		func(cmd *cobra.Command, c *caller.Caller, id string) error {
			return g.printRecord(tasks.NewClient(c).Get(cmd.Context(), id, wait))
		})
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the task has ended")
	return cmd
}

func newTasksCancelCmd(g *globals) *cobra.Command {
	return g.taskIDCmd("cancel TASK_ID", "Cancel a task: a queued one never runs, a running one's handler and processes are stopped",
		func(cmd *cobra.Command, c *caller.Caller, id string) error {
			return g.printRecord(tasks.NewClient(c).Cancel(cmd.Context(), id))
		})
}

func newTasksAnswerCmd(g *globals) *cobra.Command {
	var f taskAnswerFlags
	cmd := &cobra.Command{
		Use:   "answer TASK_ID (--answer JSON | --decline | --dismiss)",
		Short: "Answer the question a task waits on (state input_required); print its record as JSON",
		Args:  oneTaskID,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := f.answer()
			if err != nil {
				return err
			}
			c, done, err := g.newCaller(cmd, "tasks")
			if err != nil {
				return err
			}
			defer done()
			return g.printRecord(tasks.NewClient(c).Answer(cmd.Context(), args[0], f.question, a))
		},
	}
	cmd.Flags().StringVar(&f.content, "answer", "", "accept, with this JSON object as the answer")
	cmd.Flags().BoolVar(&f.decline, "decline", false, "decline the question")
	cmd.Flags().BoolVar(&f.dismiss, "dismiss", false, "dismiss the question without choosing")
	cmd.Flags().StringVar(&f.question, "question", "", "the question's id (default: the one the task waits on)")
	return cmd
}

// taskAnswerFlags are `tasks answer`'s ways to answer.
type taskAnswerFlags struct {
	content, question string
	decline, dismiss  bool
}

// answer is the answer the flags give: exactly one of them.
func (f taskAnswerFlags) answer() (caller.Answer, error) {
	n := 0
	for _, set := range []bool{f.content != "", f.decline, f.dismiss} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return caller.Answer{}, envelope.NewProblem(envelope.CodeInvalidInput, "give exactly one of --answer JSON, --decline and --dismiss").
			WithFix("`toolmesh tasks get TASK_ID` shows the question and its schema under \"question\".", envelope.HasPlaceholders)
	case f.decline:
		return caller.Decline(), nil
	case f.dismiss:
		return caller.Dismiss(), nil
	}
	if !json.Valid([]byte(f.content)) {
		return caller.Answer{}, envelope.NewProblem(envelope.CodeInvalidInput, "--answer is not valid JSON").WithExtension("pointer", "/answer")
	}
	return caller.Answer{Action: envelope.ActionAccept, Content: json.RawMessage(f.content)}, nil
}

func newTasksLsCmd(g *globals) *cobra.Command {
	var state string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List your tasks, newest first",
		Args:  usage.NoArgs,
		RunE: g.withCaller("tasks", func(cmd *cobra.Command, c *caller.Caller, _ []string) error {
			list, err := tasks.NewClient(c).List(cmd.Context(), state, limit)
			if err != nil {
				return envelope.AsProblem(err, envelope.CodeInternal)
			}
			if asJSON {
				return printJSON(g, map[string]any{"tasks": list})
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "TASK\tTOOL\tSTATE\tATTEMPT\tEVENTS\tCODE\tCREATED")
			for _, r := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.TaskID, r.Tool, r.State, r.Attempt, r.Events, r.Code, r.Created)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().StringVar(&state, "state", "", "only tasks in this state (queued, running, input_required, succeeded, failed, cancelled)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many tasks (1–1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as JSON")
	return cmd
}

// taskFlags are the task service's settings on the command line.
type taskFlags struct {
	retention                          time.Duration
	queue                              int64
	replicas                           int
	attempts                           int
	ownerTasks, ownerBytes, storeBytes int64
	ownerRunning, ownerToolRunning     int
	audit                              bool
}

func (f *taskFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.retention, "task-retention", 24*time.Hour, "how long tasks' events and results are kept")
	cmd.Flags().Int64Var(&f.queue, "task-queue", 1024, "per identity and tool, how many tasks may wait or run before submit answers overloaded")
	cmd.Flags().IntVar(&f.replicas, "task-replicas", 1, "replicas of the task streams (3 on a 3-node JetStream cluster)")
	cmd.Flags().IntVar(&f.attempts, "task-attempts", 3, "attempts of a re-runnable task whose worker is lost")
	cmd.Flags().IntVar(&f.ownerRunning, "task-owner-running", 64, "per identity, how many of its tasks each task service instance runs at once (owners take turns)")
	cmd.Flags().IntVar(&f.ownerToolRunning, "task-owner-tool-running", 16, "per identity and tool, how many of its tasks each task service instance runs at once")
	cmd.Flags().Int64Var(&f.ownerTasks, "task-owner-max-tasks", 0, "per identity, how many tasks it may keep within the retention, ended ones included (0: no bound)")
	cmd.Flags().Int64Var(&f.ownerBytes, "task-owner-max-bytes", 0, "per identity, how many bytes of args and events its tasks may keep within the retention (0: no bound)")
	cmd.Flags().Int64Var(&f.storeBytes, "task-store-max-bytes", 0, "bound on each task stream's size (log, queue, objects); a full store refuses new tasks (0: no bound)")
}

func (f *taskFlags) config(g *globals) tasks.Config {
	return tasks.Config{Prefix: g.prefix, Retention: f.retention, MaxQueuedPerTool: f.queue,
		Replicas: f.replicas, MaxAttempts: f.attempts, MaxTasksPerOwner: f.ownerTasks, MaxBytesPerOwner: f.ownerBytes,
		MaxStoreBytes: f.storeBytes, MaxRunningPerOwner: f.ownerRunning, MaxRunningPerOwnerTool: f.ownerToolRunning, Logger: g.log}
}

func newTasksServeCmd(g *globals) *cobra.Command {
	var tf taskFlags
	cmd := usage.Command("serve", "Run a task service (needs JetStream): it keeps durable calls and runs them on the mesh's workers",
		func(cmd *cobra.Command) error {
			ctx := cmd.Context()
			nc, err := g.dial(ctx, "tasks")
			if err != nil {
				return err
			}
			defer nc.Close()
			cfg := tf.config(g)
			if tf.audit {
				ac := auditConfig(g, "tasks", "tasks.")
				ac.Kind = "task"
				cfg.Middleware = []worker.Middleware{workermw.Audit(nc, ac)}
				cfg.OnRefused = workermw.AuditRefused(nc, ac)
			}
			svc, err := tasks.New(ctx, nc, cfg)
			if err != nil {
				return envelope.Problemf(envelope.CodeInvalidConfig, "task service: %v", err).
					WithFix("Point --server at a NATS server with JetStream enabled (toolmesh dev has it).", envelope.MaybeIncorrect)
			}
			fmt.Fprintf(g.stdout, "toolmesh tasks: serving durable calls under %s.tasks\n", g.prefix)
			<-ctx.Done()
			svc.Close(context.Background())
			return nil
		})
	tf.add(cmd)
	cmd.Flags().BoolVar(&tf.audit, "audit", false, "record every task action (submit, cancel, answer…, kind task) with its caller, the task's owner, on <prefix>.audit.tasks.<action> (see toolmesh audit)")
	return cmd
}
