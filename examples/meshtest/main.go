package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
	"github.com/toolmesh/toolmesh/worker"
)

// CountIn is words.count's input.
type CountIn struct {
	Text string `json:"text" jsonschema:"the text to count the words of"`
}

// CountOut is words.count's result.
type CountOut struct {
	Words   int    `json:"words"`
	Longest string `json:"longest"`
}

// countWords is the tool: plain Go, testable without a mesh too.
func countWords(_ context.Context, _ *worker.Request, in CountIn) (CountOut, error) {
	var out CountOut
	for _, w := range strings.Fields(in.Text) {
		out.Words++
		if len(w) > len(out.Longest) {
			out.Longest = w
		}
	}
	return out, nil
}

// register adds this program's tools to w: main and the test share it,
// so the test checks exactly what the worker serves.
func register(w *worker.Worker) error {
	spec := envelope.ToolSpec{Name: "words.count", Description: "Count the words of a text"}
	return worker.AddTool(w, spec, countWords)
}

func main() {
	server := flag.String("server", "", "NATS URL (default $NATS_URL, else "+mesh.DefaultURL+")")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := mesh.Connect(ctx, mesh.ConnectOptions{URL: *server, Name: "example-words"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshtest:", err)
		os.Exit(1)
	}
	defer nc.Close()
	w, err := worker.New(nc, worker.Config{})
	if err == nil {
		err = register(w)
	}
	if err == nil {
		fmt.Println("serving words.count")
		err = w.Serve(ctx, worker.ServeConfig{})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshtest:", err)
		os.Exit(1)
	}
}
