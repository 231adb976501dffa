package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
	"github.com/toolmesh/toolmesh/worker"
)

// GreetIn is greet's input. The tool's JSON Schema is inferred from it: a
// `jsonschema` tag is a description, a `toolmesh` tag adds a default and
// the allowed values. The worker checks every call against the schema
// before greet runs, so greet never sees bad input.
type GreetIn struct {
	Name     string `json:"name" jsonschema:"who to greet"`
	Language string `json:"language,omitempty" jsonschema:"the greeting's language" toolmesh:"default=en,enum=en|fr"`
}

// GreetOut is greet's result; its schema becomes the tool's output schema.
type GreetOut struct {
	Greeting string `json:"greeting"`
}

// greet is a unary tool: arguments in, one result out.
func greet(_ context.Context, _ *worker.Request, in GreetIn) (GreetOut, error) {
	hello := map[string]string{"en": "Hello", "fr": "Bonjour"}[in.Language]
	return GreetOut{Greeting: hello + ", " + in.Name}, nil
}

// CountIn is count's input: how far to count.
type CountIn struct {
	To int `json:"to" jsonschema:"the last number" toolmesh:"minimum=1,maximum=100"`
}

// Tick is one delta of count: the caller sees each as it is sent.
type Tick struct {
	N int `json:"n"`
}

// CountOut is count's result, sent after the last delta.
type CountOut struct {
	Sum int `json:"sum"`
}

// count is a streaming tool: it sends a progress event and a delta per
// number, then its result. An error from emit means the call is over
// (cancelled, or the caller went away): stop and return it.
func count(_ context.Context, _ *worker.Request, in CountIn, emit worker.TypedEmitter[Tick]) (CountOut, error) {
	sum := 0
	for n := 1; n <= in.To; n++ {
		if err := emit.Progress(float64(100*(n-1)/in.To), fmt.Sprintf("counting %d of %d", n, in.To)); err != nil {
			return CountOut{}, err
		}
		if err := emit.Delta(Tick{N: n}); err != nil {
			return CountOut{}, err
		}
		sum += n
	}
	return CountOut{Sum: sum}, nil
}

func main() {
	server := flag.String("server", "", "NATS URL (default $NATS_URL, else "+mesh.DefaultURL+")")
	flag.Parse()
	if err := run(*server); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run connects, registers the tools and serves until SIGINT or SIGTERM,
// then drains: calls in flight finish, new ones go to other workers.
func run(server string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts := mesh.ConnectOptions{URL: server, Name: "example-worker", Logger: log}
	nc, err := mesh.Connect(ctx, opts)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", opts.URLOrDefault(), err)
	}
	defer nc.Close()

	w, err := worker.New(nc, worker.Config{Logger: log})
	if err != nil {
		return err
	}
	err = worker.AddTool(w, envelope.ToolSpec{Name: "greet", Description: "Greet someone by name"}, greet)
	if err != nil {
		return err
	}
	err = worker.AddStreamTool(w, envelope.ToolSpec{Name: "count", Description: "Count from 1, one delta per number"}, count)
	if err != nil {
		return err
	}
	// When AddTool returns, the tool is callable: say so, for people and scripts.
	fmt.Println("serving greet and count on", opts.URLOrDefault())
	return w.Serve(ctx, worker.ServeConfig{})
}
