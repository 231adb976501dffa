package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/internal/redact"
	"github.com/toolmesh/toolmesh/internal/sandbox/report"
	"github.com/toolmesh/toolmesh/worker"
)

// hosted is one MCP tool as registered on the mesh.
type hosted struct {
	spec    envelope.ToolSpec
	mcpName string
	// handle serves a surface op (surface.go); nil for a server's tool.
	handle worker.HandlerFunc
}

// sync lists the server's tools and, when the set changed, moves them to
// a fresh worker: the new one registers everything first, then the old one
// drains, so no call is refused during the swap. (worker.Worker cannot
// unregister a tool, which a removed or changed tool needs.) On the first
// listing (strict) a tool the mesh cannot host fails the start, naming
// every such tool and why, unless the tools file lists it under skip; on a
// later re-listing the worker is already serving, so such a tool is
// logged as an error and the rest are hosted.
func (b *Bridge) sync(ctx context.Context, sess *mcp.ClientSession, strict bool) error {
	tools, err := b.hostable(ctx, sess, strict)
	if err != nil {
		return err
	}
	fp := fingerprintOf(tools)
	b.mu.Lock()
	same := fp == b.fp
	b.mu.Unlock()
	if same {
		return nil
	}
	w, names, err := b.startWorker(tools)
	if err != nil {
		return err
	}
	b.swap(w, names, fp)
	b.log.Info("mcp bridge: tools hosted", "tools", strings.Join(names, ", "))
	return nil
}

// hostable lists the server's tools, in the server's order, and the
// surface tools.
// A tool the mesh cannot host fails a strict (first) listing and is
// logged as an error on a later one.
func (b *Bridge) hostable(ctx context.Context, sess *mcp.ClientSession, strict bool) ([]hosted, error) {
	tools, refused, err := b.list(ctx, sess)
	if err != nil {
		return nil, err
	}
	tools = append(tools, b.surface(sess)...)
	if len(refused) > 0 {
		msg := fmt.Sprintf("cannot host %d of the server's tools: %s (list them under binding.mcp.skip to start without them)",
			len(refused), strings.Join(refused, "; "))
		if strict {
			return nil, errors.New(msg)
		}
		b.log.Error("mcp bridge: " + msg)
	}
	return tools, nil
}

// fingerprintOf is the JSON of the tools' specs: equal exactly when a
// re-listing changed nothing the mesh serves.
func fingerprintOf(tools []hosted) string {
	specs := make([]envelope.ToolSpec, len(tools))
	for i, t := range tools {
		specs[i] = t.spec
	}
	fp, _ := json.Marshal(specs)
	return string(fp)
}

// startWorker makes a fresh worker and registers every tool on it,
// returning the mesh names registered.
func (b *Bridge) startWorker(tools []hosted) (*worker.Worker, []string, error) {
	wcfg := b.cfg.Worker
	wcfg.ID = ""
	if wcfg.Description == "" {
		wcfg.Description = "MCP bridge " + b.cfg.Entry.Namespace
	}
	if wcfg.Logger == nil {
		wcfg.Logger = b.log
	}
	w, err := worker.New(b.nc, wcfg)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		h := t.handle
		if h == nil {
			h = b.handler(t.mcpName)
		}
		if err := w.Register(t.spec, h); err != nil {
			w.Stop()
			return nil, nil, fmt.Errorf("register %s: %w", t.spec.Name, err)
		}
		names = append(names, t.spec.Name)
	}
	return w, names, nil
}

// swap makes w the bridge's worker and drains the one it replaces in
// the background, so calls it already took finish.
func (b *Bridge) swap(w *worker.Worker, names []string, fp string) {
	b.mu.Lock()
	old := b.w
	b.w, b.tools, b.fp = w, names, fp
	b.mu.Unlock()
	if old == nil {
		return
	}
	b.drains.Add(1)
	go func() {
		defer b.drains.Done()
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = old.Drain(dctx)
	}()
}

// list reads the server's tools and maps each onto a mesh spec carrying
// the server's definition and position (mcpmap.Listed): the hostable
// ones, and "<tool>: <why>" for each the mesh cannot host. Tools
// the tools file says to skip are neither.
func (b *Bridge) list(ctx context.Context, sess *mcp.ClientSession) ([]hosted, []string, error) {
	var tools []hosted
	var refused []string
	position := -1
	listed := map[string]bool{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("tools/list: %w", err)
		}
		position++
		listed[t.Name] = true
		if slices.Contains(b.cfg.Entry.Server.Skip, t.Name) {
			b.log.Info("mcp bridge: tool skipped as the tools file says", "tool", t.Name)
			continue
		}
		spec, changes, err := mcpmap.Spec(b.cfg.Entry.Namespace, t)
		if err != nil {
			refused = append(refused, fmt.Sprintf("%q: %v", t.Name, err))
			continue
		}
		mcpmap.Listed(&spec, b.defs.of(t.Name), position)
		if b.plan != nil {
			spec.Sandbox = report.Summary(b.plan.Policy)
		}
		if len(changes) > 0 {
			b.log.Info("mcp bridge: schema normalised (recorded in its $comment)", "tool", spec.Name, "changes", strings.Join(changes, "; "))
		}
		tools = append(tools, hosted{spec: spec, mcpName: t.Name})
	}
	b.mu.Lock()
	b.listed = listed
	b.mu.Unlock()
	return tools, refused, nil
}

// handler forwards one mesh call to the MCP tool mcpName. Cancelling the
// mesh call cancels ctx, and the SDK then sends notifications/cancelled.
// Every error it returns is redacted of the binding's secrets (the worker
// adds the call's bearer and URL credentials).
func (b *Bridge) handler(mcpName string) worker.HandlerFunc {
	forward := b.forward(mcpName)
	return func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
		res, err := forward(ctx, req, emit)
		return res, b.secrets.ProblemOf(err)
	}
}

// forward is handler before redaction.
func (b *Bridge) forward(mcpName string) worker.HandlerFunc {
	return func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
		sess := b.session()
		if sess == nil {
			return nil, b.downProblem("is down")
		}
		params := &mcp.CallToolParams{Name: mcpName, Arguments: json.RawMessage(req.Args)}
		var sk *sink
		if req.Streaming {
			sk = newSink(emit)
			defer sk.close()
			token := "toolmesh-" + req.CallID
			b.sinks.Store(token, sk)
			defer b.sinks.Delete(token)
			params.SetProgressToken(token)
		}
		defer b.askers.track(ctx, req, sk)()
		b.declareFor(ctx, req, params)
		res, err := b.callRounds(withCallSink(ctx, sk), sess, req, params)
		if err != nil {
			return nil, b.failure(ctx, sess, mcpName, err)
		}
		return b.sandboxed(resultOf(res, b.secrets))
	}
}

// failure maps what a request to the server (a tool call, or a surface
// op's method) failed with onto the mesh: the call's own end, a server
// that is down or unreachable (worker_lost, retry_after), a Problem as it
// is, or the server's JSON-RPC error (callProblem).
func (b *Bridge) failure(ctx context.Context, sess *mcp.ClientSession, what string, err error) error {
	var p *envelope.Problem
	switch {
	case errors.As(err, &p):
		return p
	case ctx.Err() != nil:
		return ctx.Err()
	case errClosed(err):
		return b.downProblem("exited while the call was in flight")
	case errUnreachable(err):
		// An HTTP server went away: end the session so the supervisor
		// reconnects with backoff, as it restarts a stdio server.
		_ = sess.Close()
		return b.downProblem("cannot be reached")
	default:
		if p := b.authProblem(err); p != nil {
			return p
		}
		return b.callProblem(what, err)
	}
}

// errUnreachable reports a transport failure reaching an HTTP server.
func errUnreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// callProblem maps a JSON-RPC error from the server onto the registry;
// the server's own error travels in the Problem's "mcp_error" extension
// ({"code","message","data"}), so the MCP gateway can answer its client with it.
func (b *Bridge) callProblem(what string, err error) *envelope.Problem {
	var je *jsonrpc.Error
	if !asJSONRPC(err, &je) {
		return envelope.Problemf(envelope.CodeToolFailed, "the MCP server answered an error: %s", b.redact(err))
	}
	var p *envelope.Problem
	switch {
	case je.Code == jsonrpc.CodeInvalidParams && strings.Contains(je.Message, "unknown tool"):
		p = envelope.Problemf(envelope.CodeToolNotFound, "the MCP server no longer has tool %q", what)
	case je.Code == jsonrpc.CodeInvalidParams || je.Code == codeResourceNotFound:
		p = envelope.Problemf(envelope.CodeInvalidInput, "the MCP server refused the arguments of %s: %s", what, b.redact(je))
	default:
		p = envelope.Problemf(envelope.CodeToolFailed, "the MCP server answered %s with an error: %s", what, b.redact(je))
	}
	mcpErr := map[string]any{"code": je.Code, "message": b.redact(errors.New(je.Message))}
	if d := b.secrets.String(string(je.Data)); len(je.Data) > 0 && json.Valid([]byte(d)) {
		mcpErr["data"] = json.RawMessage(d) // a resource-not-found's {"uri"} (SEP-2164), say
	}
	return p.WithExtension("mcp_error", mcpErr)
}

// codeResourceNotFound is MCP's JSON-RPC error for resources/read of a
// URI the server does not have.
const codeResourceNotFound = -32002

// resultOf maps an MCP result onto the mesh (mcpmap.MeshResult), and an
// error result onto the Problem carrying it whole (mcpmap.ErrorProblem),
// which the handler redacts again, the server's blocks among it.
func resultOf(res *mcp.CallToolResult, secrets *redact.Redactor) (any, error) {
	if res.IsError {
		return nil, mcpmap.ErrorProblem(res, secrets)
	}
	return mcpmap.MeshResult(res), nil
}
