package gateway

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// surfaces are the bridged servers' resources, prompts and completions as
// the catalogue shows them: namespace → surface op → mesh tool name
// (docs/protocol.md §24). Only tools the gateway's filter allows count.
type surfaces map[string]map[string]string

// add records a surface tool; false when spec is not one.
func (s surfaces) add(spec *envelope.ToolSpec) bool {
	ns, op, ok := wire.SplitMCPSurface(spec.Name, spec.Tags)
	if !ok {
		return false
	}
	if s[ns] == nil {
		s[ns] = map[string]string{}
	}
	s[ns][op] = spec.Name
	return true
}

// offering returns the namespaces offering op, sorted, with its tool.
func (s surfaces) offering(op string) []nsTool {
	var out []nsTool
	for ns, ops := range s {
		if t, ok := ops[op]; ok {
			out = append(out, nsTool{ns: ns, tool: t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ns < out[j].ns })
	return out
}

// nsTool is one namespace's tool for a surface op.
type nsTool struct{ ns, tool string }

// routes remember which namespace listed which resource URI and which
// template, so a read (or a subscription, or a completion of a template's
// argument) goes to the server that offers it and to no other.
type routes struct {
	uris      map[string]string // resource URI in normal form (mcpmap.ResourceURI) → namespace
	templates []routeTemplate
}

type routeTemplate struct {
	ns, raw string
	re      *uritemplate.Template
}

// surfaceView returns the surfaces now served.
func (g *Gateway) surfaceView() surfaces {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.surf
}

// surfaceMiddleware answers the resources and prompts methods from the
// bridged servers on the mesh; every other method goes on to the SDK.
func (g *Gateway) surfaceMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/list":
			return g.listResources(ctx, req)
		case "resources/templates/list":
			return g.listTemplates(ctx, req)
		case "resources/read":
			if r, ok := req.(*mcp.ReadResourceRequest); ok {
				return g.readResource(ctx, r)
			}
		case "prompts/list":
			return g.listPrompts(ctx, req)
		case "prompts/get":
			if r, ok := req.(*mcp.GetPromptRequest); ok {
				return g.getPrompt(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

// surfaceCall calls a surface tool with the client's bearer and decodes
// its result into T; a Problem becomes the JSON-RPC error the client gets.
func surfaceCall[T any](ctx context.Context, g *Gateway, req mcp.Request, tool string, args any) (*T, error) {
	var opts []caller.Option
	if bearer := bearerOfExtra(req.GetExtra()); bearer != "" {
		opts = append(opts, caller.WithBearer(bearer))
	}
	out, err := caller.CallAs[T](ctx, g.cfg.Caller, tool, args, opts...)
	if err != nil {
		return nil, rpcError(envelope.AsProblem(err, envelope.CodeInternal))
	}
	return &out, nil
}

// rpcError is the JSON-RPC error for a surface call's Problem: the
// bridged server's own error when it carries one (mcp_error), else
// invalid params for the caller's mistakes and internal error for the
// rest; the problem+json travels as the error's data.
func rpcError(p *envelope.Problem) *jsonrpc.Error {
	data, _ := json.Marshal(p)
	if raw, ok := p.Extensions["mcp_error"]; ok {
		b, _ := json.Marshal(raw)
		var e struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal(b, &e) == nil && e.Code != 0 {
			if len(e.Data) > 0 && string(e.Data) != "null" {
				data = e.Data // the server's own (a resource-not-found's {"uri"})
			}
			return &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: data}
		}
	}
	code := int64(jsonrpc.CodeInternalError)
	if p.Code == envelope.CodeInvalidInput || p.Code == envelope.CodeToolNotFound {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: problemLine(p), Data: data}
}

// errNotFound is MCP's resource-not-found error (SEP-2164: invalid
// params, the URI in its data) for a resource no namespace offers.
func errNotFound(uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Resource not found", Data: data}
}

// listResources gathers every namespace's resources, URIs as their
// servers gave them, and remembers which namespace listed each URI. A
// namespace that fails is left out and named in _meta.
func (g *Gateway) listResources(ctx context.Context, req mcp.Request) (*mcp.ListResourcesResult, error) {
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, Cacheable: cacheHints(req)}
	uris := map[string]string{}
	res.Meta = listEach(ctx, g, req, wire.MCPResourcesList, func(ns string, got *mcp.ListResourcesResult) {
		for _, r := range got.Resources {
			n, err := mcpmap.ResourceURI(r.URI)
			if err != nil {
				continue // no read of it would be let through
			}
			if _, dup := uris[n]; !dup {
				uris[n] = ns
				res.Resources = append(res.Resources, r)
			}
		}
	})
	g.mu.Lock()
	g.routes.uris = uris
	g.mu.Unlock()
	return res, nil
}

// listTemplates gathers every namespace's resource templates and
// remembers which namespace listed each.
func (g *Gateway) listTemplates(ctx context.Context, req mcp.Request) (*mcp.ListResourceTemplatesResult, error) {
	res := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}, Cacheable: cacheHints(req)}
	var tmpls []routeTemplate
	res.Meta = listEach(ctx, g, req, wire.MCPResourceTemplatesList, func(ns string, got *mcp.ListResourceTemplatesResult) {
		for _, t := range got.ResourceTemplates {
			res.ResourceTemplates = append(res.ResourceTemplates, t)
			if re, err := uritemplate.New(t.URITemplate); err == nil {
				tmpls = append(tmpls, routeTemplate{ns: ns, raw: t.URITemplate, re: re})
			}
		}
	})
	g.mu.Lock()
	g.routes.templates = tmpls
	g.mu.Unlock()
	return res, nil
}

// listEach asks every namespace offering the listing op for it and hands
// each answer (a T) to add, in namespace order; a namespace whose answer
// fails is left out and named in the returned _meta (gapsMeta).
func listEach[T any](ctx context.Context, g *Gateway, req mcp.Request, op string, add func(ns string, got *T)) mcp.Meta {
	var gaps []string
	for _, nt := range g.surfaceView().offering(op) {
		got, err := surfaceCall[T](ctx, g, req, nt.tool, struct{}{})
		if err != nil {
			gaps = append(gaps, nt.ns+": "+err.Error())
			continue
		}
		add(nt.ns, got)
	}
	return gapsMeta(gaps)
}

// gapsMeta names the namespaces a listing had to leave out.
func gapsMeta(gaps []string) mcp.Meta {
	if len(gaps) == 0 {
		return nil
	}
	return mcp.Meta{"io.toolmesh/complete": false, "io.toolmesh/scope_warnings": gaps}
}

// route finds the namespace offering op for a resource URI (or a
// template's raw text, for a completion): the one that listed the URI or
// a template matching its normal form (mcpmap.ResourceURI), listing again
// once when nothing remembered matches. A URI no namespace offers goes
// nowhere, even when only one server could take it (its catch-all
// template does not make every URI its own), and a malformed one or one
// with a ".." segment is refused before any server sees it.
func (g *Gateway) route(ctx context.Context, req mcp.Request, op, uri string) (string, error) {
	normal, err := mcpmap.ResourceURI(uri)
	if err != nil && op != wire.MCPComplete {
		return "", rpcError(envelope.AsProblem(err, envelope.CodeInvalidInput))
	}
	offer := g.surfaceView().offering(op)
	if len(offer) == 0 {
		return "", errNotFound(uri)
	}
	for attempt := 0; attempt < 2; attempt++ {
		if ns := g.owner(uri, normal); ns != "" {
			for _, nt := range offer {
				if nt.ns == ns {
					return nt.tool, nil
				}
			}
			return "", errNotFound(uri)
		}
		if attempt == 0 {
			_, _ = g.listResources(ctx, req)
			_, _ = g.listTemplates(ctx, req)
		}
	}
	return "", errNotFound(uri)
}

// owner is the namespace that listed the URI whose normal form is
// normal, or has a template matching it (or, for a completion, whose
// template's raw text is uri).
func (g *Gateway) owner(uri, normal string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ns, ok := g.routes.uris[normal]; ok && normal != "" {
		return ns
	}
	for _, t := range g.routes.templates {
		if t.raw == uri || normal != "" && (t.re.Regexp().MatchString(normal) || t.re.Regexp().MatchString(uri)) {
			return t.ns
		}
	}
	return ""
}

// readResource reads a resource from the namespace that offers it.
func (g *Gateway) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	tool, err := g.route(ctx, req, wire.MCPResourcesRead, req.Params.URI)
	if err != nil {
		return nil, err
	}
	res, err := surfaceCall[mcp.ReadResourceResult](ctx, g, req, tool, map[string]string{"uri": req.Params.URI})
	if err != nil {
		return nil, err
	}
	if res.CacheScope == "" { // a server at 2025-11-25 sends none
		res.Cacheable = cacheHints(req)
	}
	return completed(req, res)
}

// completed marks a relayed prompts/get or resources/read result
// resultType "complete" for a 2026-07-28 request, whose schema requires
// it ("input_required" when it carries the server's input requests). The go-sdk sets that field (unexported) only on results its own
// handlers return, and these the gateway answers itself, so it is set the
// one way the SDK exposes: decoding the result with the field present.
func completed[T any](req mcp.Request, res *T) (*T, error) {
	pv, ok := req.(interface{ ProtocolVersion() string })
	if !ok || pv.ProtocolVersion() < protocolStateless {
		return res, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	fields["resultType"] = json.RawMessage(`"complete"`)
	if ir, ok := fields["inputRequests"]; ok && len(ir) > 2 {
		fields["resultType"] = json.RawMessage(`"input_required"`)
	}
	if b, err = json.Marshal(fields); err != nil {
		return nil, err
	}
	var out T
	return &out, json.Unmarshal(b, &out)
}

// cacheHints are the caching hints (SEP-2549) of a result the gateway
// gathers itself, which the SDK fills only for results it builds: stale
// at once (ttlMs 0: the fleet changes under it), and "private" when the
// client presented a bearer or signed in (a validated token: with one
// gateway per person, the listing is that person's view) — the listing is
// then of what that caller may see, which no other client may be served
// from a cache — else "public".
func cacheHints(req mcp.Request) mcp.Cacheable {
	if extra := req.GetExtra(); bearerOfExtra(extra) != "" || extra != nil && extra.TokenInfo != nil {
		return mcp.Cacheable{CacheScope: "private"}
	}
	return mcp.Cacheable{CacheScope: "public"}
}

// listPrompts gathers every namespace's prompts under served names: the
// prompt's own under --namespace, else "<namespace>.<prompt>", as tools
// are named (both after NamePrefix).
func (g *Gateway) listPrompts(ctx context.Context, req mcp.Request) (*mcp.ListPromptsResult, error) {
	res := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}, Cacheable: cacheHints(req)}
	res.Meta = listEach(ctx, g, req, wire.MCPPromptsList, func(ns string, got *mcp.ListPromptsResult) {
		for _, p := range got.Prompts {
			p.Name = g.servedName(ns, p.Name)
			res.Prompts = append(res.Prompts, p)
		}
	})
	return res, nil
}

// servedName is how a namespace's prompt is named to MCP clients.
func (g *Gateway) servedName(ns, name string) string {
	return g.cfg.NamePrefix + strings.TrimPrefix(ns+"."+name, g.filter.namespace)
}

// promptOf finds the namespace's surface tool for op and the server's own
// name of a served prompt name.
func (g *Gateway) promptOf(op, served string) (tool, name string, err error) {
	for _, nt := range g.surfaceView().offering(op) {
		if n, ok := strings.CutPrefix(served, g.servedName(nt.ns, "")); ok && n != "" {
			return nt.tool, n, nil
		}
	}
	return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt " + served}
}

// getPrompt gets a prompt from its namespace.
func (g *Gateway) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	tool, name, err := g.promptOf(wire.MCPPromptsGet, req.Params.Name)
	if err != nil {
		return nil, err
	}
	args := map[string]any{"name": name}
	if req.Params.Arguments != nil {
		args["arguments"] = req.Params.Arguments
	}
	// A 2026-07-28 server's input_required rounds pass through as they
	// are: its requests out, the client's responses and the server's own
	// request state back (prompts/get is no mesh call that could ask).
	if len(req.Params.InputResponses) > 0 {
		args["inputResponses"] = req.Params.InputResponses
	}
	if req.Params.RequestState != "" {
		args["requestState"] = req.Params.RequestState
	}
	res, err := surfaceCall[mcp.GetPromptResult](ctx, g, req, tool, args)
	if err != nil {
		return nil, err
	}
	return completed(req, res)
}

// complete answers completion/complete from the namespace that offers
// the referenced prompt or resource template.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	ref := *p.Ref
	var tool string
	var err error
	switch ref.Type {
	case "ref/prompt":
		tool, ref.Name, err = g.promptOf(wire.MCPComplete, ref.Name)
	case "ref/resource":
		tool, err = g.route(ctx, req, wire.MCPComplete, ref.URI)
	default:
		err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown completion reference type " + ref.Type}
	}
	if err != nil {
		return nil, err
	}
	p.Ref = &ref
	args := map[string]any{"ref": p.Ref, "argument": p.Argument}
	if p.Context != nil {
		args["context"] = p.Context
	}
	return surfaceCall[mcp.CompleteResult](ctx, g, req, tool, args)
}

// bearerOfExtra returns the bearer an HTTP client presented ("" over stdio).
func bearerOfExtra(extra *mcp.RequestExtra) string {
	if extra == nil || extra.Header == nil {
		return ""
	}
	v, ok := strings.CutPrefix(extra.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}
