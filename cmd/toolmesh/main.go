package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/bench"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh"
)

// globals are the flags every command shares.
type globals struct {
	connect  mesh.ConnectOptions
	nkey     string
	prefix   string
	format   string
	logLevel string
	// allowUnconfined is worker's and dev's --allow-unconfined.
	allowUnconfined bool

	stdout, stderr io.Writer
	stdin          io.Reader
	log            *slog.Logger
}

func main() {
	sandbox.Main() // started as the sandbox helper: confine, exec the tool's program, never return
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	executed, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	p := asCommandProblem(err)
	if !errors.As(err, new(fromCall)) {
		p = fitFix(p, executed) // a usage failure's; a call's Problem keeps the fix it came with
	}
	format, ferr := SelectFormat(formatFromArgs(g.format, args), isTerminal(stderr))
	if ferr != nil {
		format = FormatJSON
	}
	_, _ = stderr.Write(renderProblem(p, format))
	return p.ExitCode
}

// asCommandProblem turns any error into the Problem the command reports.
// Every command returns Problems itself, so anything else came from flag
// or argument parsing: a usage error.
func asCommandProblem(err error) *envelope.Problem {
	var p *envelope.Problem
	if errors.As(err, &p) {
		return p
	}
	return envelope.NewProblem(envelope.CodeInvalidInput, err.Error()).
		WithFix("See `toolmesh --help` or `toolmesh <command> --help` for the usage.", envelope.MaybeIncorrect)
}

// formatFromArgs finds --format even when flag parsing failed before it.
func formatFromArgs(parsed string, args []string) string {
	if parsed != "" {
		return parsed
	}
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--format="); ok {
			return v
		}
		if a == "--format" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "toolmesh",
		Short:         "A distributed tool mesh for AI agents, on NATS",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       buildVersion(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := SelectFormat(g.format, false); err != nil {
				return usage.FlagValueProblem("format", g.format, string(FormatJSON), string(FormatPretty))
			}
			level := slog.LevelWarn
			if err := level.UnmarshalText([]byte(g.logLevel)); g.logLevel != "" && err != nil {
				return usage.FlagValueProblem("log-level", g.logLevel, "debug", "info", "warn", "error")
			}
			if g.logLevel == "" && (cmd.Name() == "dev" || cmd.Name() == "worker") {
				level = slog.LevelInfo
			}
			g.log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return envelope.NewProblem(envelope.CodeInvalidInput, err.Error()).
			WithFix(fmt.Sprintf("See `%s --help` for the flags.", cmd.CommandPath()), envelope.MaybeIncorrect)
	})
	f := root.PersistentFlags()
	f.StringVar(&g.connect.URL, "server", "", "NATS server URL(s), comma-separated (default $NATS_URL, then "+mesh.DefaultURL+")")
	f.StringVar(&g.connect.Creds, "creds", "", "NATS credentials file (default $NATS_CREDS)")
	f.StringVar(&g.nkey, "nkey", "", "NATS nkey seed file (default $NATS_NKEY)")
	f.StringVar(&g.connect.User, "user", "", "NATS user (default $NATS_USER)")
	f.StringVar(&g.connect.Password, "password", "", "NATS password (default $NATS_PASSWORD; prefer it: argv is visible to other users)")
	f.StringVar(&g.connect.Token, "token", "", "NATS token (default $NATS_TOKEN)")
	f.StringVar(&g.connect.TLSCA, "tls-ca", "", "CA certificate file for TLS")
	f.StringVar(&g.connect.TLSCert, "tls-cert", "", "client certificate file for TLS")
	f.StringVar(&g.connect.TLSKey, "tls-key", "", "client key file for TLS")
	f.IntVar(&g.connect.MaxReconnects, "max-reconnects", 0, "reconnect attempts before a lost NATS connection is given up (0: never give up)")
	f.DurationVar(&g.connect.ReconnectWait, "reconnect-wait", 0, "pause between NATS reconnect attempts (default 2s)")
	f.StringVar(&g.prefix, "prefix", wire.DefaultPrefix, "subject prefix of the mesh")
	f.StringVar(&g.format, "format", "", "error format: json or pretty (default: pretty on a terminal, json otherwise)")
	f.StringVar(&g.logLevel, "log-level", "", "log level: debug, info, warn, error (default info for dev and worker, warn otherwise)")
	root.AddCommand(newDevCmd(g), newWorkerCmd(g), newCallCmd(g), newToolsCmd(g), newBenchCmd(g))
	root.AddCommand(newExplainCmd(g), newVersionCmd(g))
	root.AddCommand(newTopCmd(g))
	root.AddCommand(newTasksCmd(g), newAuditCmd(g))
	addCompletions(g, root)
	root.AddCommand(newMCPCmd(g))
	root.AddCommand(newAuthCalloutCmd(g), newLoginCmd(g))
	return root
}

// dial connects to the mesh's NATS server; failure is unauthorized when
// the server refused the credentials, else connection_lost with the way to
// start a local mesh (the URL is printed without its password).
func (g *globals) dial(ctx context.Context, name string) (*nats.Conn, error) {
	opts := g.connect
	opts.NKeySeed = g.nkey
	opts = credentialsFromEnv(opts, os.Getenv)
	opts.Name = "toolmesh " + name
	opts.Logger = g.log
	nc, err := mesh.Connect(ctx, opts)
	if err != nil {
		return nil, mesh.DialProblem(opts.URLOrDefault(), err)
	}
	return nc, nil
}

// newBenchCmd is `toolmesh bench`, which reads the global flags, the
// logger and the streams once the command line is parsed.
func newBenchCmd(g *globals) *cobra.Command {
	return bench.Command(func() *bench.Env {
		return &bench.Env{Dial: g.dial, Connect: g.connect, NKey: g.nkey, Prefix: g.prefix, Log: g.log,
			Stdin: g.stdin, Stdout: g.stdout, Stderr: g.stderr}
	})
}
