package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// greeting is greet's result as this caller reads it. A caller needs no
// import of the worker's code: the result is JSON, and any type that fits
// it will do.
type greeting struct {
	Greeting string `json:"greeting"`
}

func main() {
	server := flag.String("server", "", "NATS URL (default $NATS_URL, else "+mesh.DefaultURL+")")
	flag.Parse()
	if err := run(*server); err != nil {
		fmt.Fprintln(os.Stderr, "caller:", err)
		os.Exit(1)
	}
}

func run(server string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := mesh.Connect(ctx, mesh.ConnectOptions{URL: server, Name: "example-caller"})
	if err != nil {
		return err
	}
	defer nc.Close()
	// One caller multiplexes every call over one inbox; share it.
	c, err := caller.New(nc, caller.Config{})
	if err != nil {
		return err
	}
	defer c.Close()

	// A unary call, decoded into a Go value. language is left out: the
	// worker fills in its schema default ("en").
	out, err := caller.CallAs[greeting](ctx, c, "greet", map[string]any{"name": "Ada"})
	if err != nil {
		return err
	}
	fmt.Println("greet:", out.Greeting)

	if err := countTo(ctx, c, 3); err != nil {
		return err
	}

	// Bad arguments never reach the tool: the call fails with a Problem
	// that says what is wrong, how to fix it, and whether a retry helps.
	_, err = c.Call(ctx, "greet", map[string]any{"name": "Ada", "language": "de"})
	var p *envelope.Problem
	if !errors.As(err, &p) {
		return fmt.Errorf("want a Problem, got %v", err)
	}
	fmt.Println("bad call:", p.Code, "exit code", p.ExitCode)
	return nil
}

// countTo streams count and prints every event as it arrives. The last
// event is the terminal one: the result, or an error with its Problem.
func countTo(ctx context.Context, c *caller.Caller, to int) error {
	s, err := c.Stream(ctx, "count", map[string]int{"to": to})
	if err != nil {
		return err // the call could not be sent at all
	}
	defer s.Close() // leaving early cancels the call
	for ev, err := range s.Events() {
		if err != nil {
			return err // the call failed: err is its *envelope.Problem
		}
		switch ev.Type {
		case envelope.EventStart:
			fmt.Println("start") // ev.CallID and ev.Metadata name the call and worker
		case envelope.EventProgress:
			pct, _ := ev.Percent()
			fmt.Printf("progress %.0f%% %s\n", pct, ev.Message)
		case envelope.EventDelta, envelope.EventResult:
			fmt.Println(ev.Type, string(ev.Data))
		}
	}
	return nil
}
