// Command mcpbridgeclient is the client the official MCP conformance
// suite's client scenarios drive (`conformance client --command
// mcpbridgeclient`): the MCP bridge itself, on a mesh of its own (an
// embedded NATS server), is the client. It bridges the suite's server
// (the URL, its last argument) under the namespace "conf", speaking the
// revision in MCP_CONFORMANCE_PROTOCOL_VERSION, and then calls each tool
// the server listed through the mesh, as a mesh caller would: the bridge
// sends the MCP requests the scenario checks.
//
// The calls are those the scenario's context names, if it names any;
// else each tool is called with arguments made from its schema as the mesh
// carries it (a number for each required number, a string for each
// required string), except where a scenario names what its tools are to
// be given: json-schema-2020-12-preservation's echo tool gets the focal
// tool's input schema, as the mesh carries it. A question a call asks
// (a server's elicitation) is accepted with an empty form, leaving the
// bridge to send what the server's defaults say.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// namespace is the suite's server's namespace on the mesh.
const namespace = "conf"

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: mcpbridgeclient SERVER_URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		log.Fatal(err)
	}
}

// run bridges the server at url and calls each of its tools.
func run(ctx context.Context, url, scenario string) error {
	srv, err := embedded.Start(ctx, embedded.Config{})
	if err != nil {
		return fmt.Errorf("mesh: %v", err)
	}
	defer func() { _ = srv.Shutdown(context.Background()) }()
	nc, err := srv.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	entry := bridge.Entry{Namespace: namespace, Server: bridge.ServerConfig{URL: url,
		ClientCapabilities: []string{"elicitation"}, Protocol: protocolOf()}}
	b, err := bridge.Start(ctx, nc, bridge.Config{Entry: entry, Worker: worker.Config{Logger: quiet}, Logger: quiet})
	if err != nil {
		return fmt.Errorf("bridge: %v", err)
	}
	defer func() { _ = b.Drain(context.Background()) }()
	c, err := caller.New(nc, caller.Config{})
	if err != nil {
		return err
	}
	specs := map[string]envelope.ToolSpec{}
	for _, name := range b.Tools() {
		spec, err := c.Catalog().Describe(ctx, name)
		if err != nil {
			return fmt.Errorf("describe %s: %v", name, err)
		}
		specs[name] = spec
	}
	var failed []string
	for _, call := range plan(scenario, specs) {
		// WithServerArgs: the call speaks for an MCP client, as the MCP
		// gateway's do, so the server sees the arguments as given (a null
		// the schema does not allow, say) and judges them itself.
		if _, err := c.Call(ctx, call.name, call.args, caller.OnQuestion(acceptEmpty), caller.WithServerArgs()); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", call.name, err))
		}
	}
	if len(failed) > 0 {
		// A tool's own error result is the scenario's to judge; report it.
		fmt.Fprintln(os.Stderr, "calls that ended in a Problem:\n  "+strings.Join(failed, "\n  "))
	}
	return nil
}

// toolCall is one mesh call of the plan.
type toolCall struct {
	name string
	args any
}

// plan is the calls to make: those the scenario's context names
// (MCP_CONFORMANCE_CONTEXT's toolCalls), else each tool the server
// listed, in name order, with arguments made from its schema (argsFor).
func plan(scenario string, specs map[string]envelope.ToolSpec) []toolCall {
	var sc struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &sc)
	var out []toolCall
	for _, c := range sc.ToolCalls {
		out = append(out, toolCall{name: namespace + "." + c.Name, args: c.Arguments})
	}
	if len(out) > 0 {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		spec := specs[name]
		if _, _, surface := wire.SplitMCPSurface(spec.Name, spec.Tags); !surface {
			out = append(out, toolCall{name: name, args: argsFor(scenario, spec, specs)})
		}
	}
	return out
}

// protocolOf is the revision the suite asks for, as the bridge names it
// ("" for the bridge's default, 2025-11-25).
func protocolOf() string {
	if v := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"); v >= "2026-07-28" {
		return "2026-07-28"
	}
	return ""
}

// acceptEmpty answers a question by accepting an empty form; a question
// carrying a 2026-07-28 server's input requests (one property per request,
// the request under "x-mcp-input") is answered request by request: an
// elicitation accepted with an empty form, a roots request with no roots.
func acceptEmpty(_ context.Context, q caller.Question) (caller.Answer, error) {
	var s struct {
		Properties map[string]map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(q.Schema, &s)
	answer := map[string]any{}
	for key, prop := range s.Properties {
		var r struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(prop["x-mcp-input"], &r) != nil {
			continue
		}
		switch r.Method {
		case "elicitation/create":
			answer[key] = map[string]any{"action": "accept", "content": map[string]any{}}
		case "roots/list":
			answer[key] = map[string]any{"roots": []any{}}
		}
	}
	return caller.Accept(answer)
}

// argsFor makes the arguments of one call of tool.
func argsFor(scenario string, tool envelope.ToolSpec, all map[string]envelope.ToolSpec) map[string]any {
	if scenario == "json-schema-2020-12-preservation" {
		if _, ok := schemaProps(tool.InputSchema)["schema"]; ok {
			for name, other := range all {
				if name != tool.Name && !strings.Contains(name, "._mcp.") {
					return map[string]any{"schema": json.RawMessage(other.InputSchema)}
				}
			}
		}
	}
	args := map[string]any{}
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(tool.InputSchema, &s)
	props := schemaProps(tool.InputSchema)
	for _, name := range s.Required {
		var p struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(props[name], &p)
		switch p.Type {
		case "number", "integer":
			args[name] = 1
		case "boolean":
			args[name] = true
		case "object":
			args[name] = map[string]any{}
		case "array":
			args[name] = []any{}
		default:
			args[name] = "x"
		}
	}
	return args
}

// schemaProps is an object schema's properties.
func schemaProps(schema json.RawMessage) map[string]json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	return s.Properties
}
