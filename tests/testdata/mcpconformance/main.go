// Command mcpconformance is toolmesh's own MCP server implementing the
// server specification of the official conformance suite
// (@modelcontextprotocol/conformance, written for 0.1.12 and run with
// 0.2.0-alpha.12 at 2025-11-25 and 2026-07-28): its test tools, resources,
// prompts, completion and logging, and the tools of the tasks extension
// (io.modelcontextprotocol/tasks, served by taskfront.go), written from the suite's scenario
// descriptions on the official Go SDK. It serves stdio, or streamable HTTP
// with -http ADDR (printing "listening on URL" to stderr).
//
// The suite is run against it directly (the baseline) and through the
// mesh (suite → toolmesh mcp --namespace → mesh → bridge → this server).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on ADDR instead of stdio")
	flag.Parse()
	s := newServer()
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, bothModels(s)))
}

// bothModels serves 2025-11-25 sessions and, to requests whose
// Mcp-Protocol-Version names 2026-07-28 or later, the stateless revision:
// the SDK accepts that revision only on a stateless handler.
func bothModels(s *mcp.Server) http.Handler {
	get := func(*http.Request) *mcp.Server { return s }
	stateful := mcp.NewStreamableHTTPHandler(get, nil)
	// The tasks extension (taskfront.go) is served in front of the
	// stateless handler: it is defined at 2026-07-28 only.
	stateless := newTaskFront(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// newServer builds the server with every capability the suite tests.
func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "toolmesh-conformance-fixture", Version: "1.0.0"}, &mcp.ServerOptions{
		CompletionHandler:  complete,
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Extensions:  map[string]any{tasksExtension: map[string]any{}},
		},
	})
	addContentTools(s)
	addBehaviourTools(s)
	addAskingTools(s)
	addInputRequiredTools(s, newStateKey())
	addStatelessTools(s)
	addTaskTools(s)
	addResources(s)
	addPrompts(s)
	return s
}

// complete answers completion/complete (the suite checks the shape).
func complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}, Total: 0, HasMore: false}}, nil
}
