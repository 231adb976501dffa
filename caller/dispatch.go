package caller

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/internal/providerresults"
)

// defaultDispatchConcurrency bounds how many of one turn's tool calls run
// at once when no WithConcurrency is given.
const defaultDispatchConcurrency = 8

// DispatchEvent is one event of one dispatched call, as it arrives.
// Index is the call's position in the model's output.
type DispatchEvent struct {
	Index int
	Call  provider.ToolCall
	Event envelope.ToolEvent
}

// DispatchOption adjusts one Dispatch.
type DispatchOption func(*dispatchOptions)

type dispatchOptions struct {
	concurrency int
	onEvent     func(DispatchEvent)
	callOpts    []Option
}

// WithConcurrency bounds how many calls run at once (n < 1 means 1;
// without it, 8).
func WithConcurrency(n int) DispatchOption {
	return func(o *dispatchOptions) { o.concurrency = max(n, 1) }
}

// OnEvent hands every event of every call to fn as it arrives — start,
// progress, deltas and exactly one terminal event per call, a call that
// never ran included — so a streaming UI can show tool progress. Calls
// are concurrent, but fn is called by one goroutine at a time; a slow fn
// slows the calls' consumption (and so, by credit, their producers).
func OnEvent(fn func(DispatchEvent)) DispatchOption {
	return func(o *dispatchOptions) { o.onEvent = fn }
}

// WithCallOptions applies opts (bearer, timeout, retries, …) to every call.
func WithCallOptions(opts ...Option) DispatchOption {
	return func(o *dispatchOptions) { o.callOpts = append(o.callOpts, opts...) }
}

// Dispatched is one turn's tool calls and their results in the toolset's
// provider shape, in the order the model wrote the calls.
type Dispatched struct {
	// Calls are the calls as parsed, mapped onto mesh tools.
	Calls []provider.ToolCall
	// Outcomes are what each call produced.
	Outcomes []provider.Outcome
	// Items are the per-call result elements in the provider's shape (an
	// OpenAI tool message, an Anthropic tool_result block, …).
	Items []json.RawMessage
	// Messages are what to append to the conversation (the items wrapped
	// as the provider carries them): the agent loop's next input.
	Messages []json.RawMessage
}

// Dispatch runs the tool calls in a model's output on the mesh — the one
// helper an agent loop needs. It parses output in ts's provider shape,
// runs the calls concurrently (bounded), and returns that provider's
// tool-result messages in the calls' order. A call that cannot run (an
// unknown tool, arguments that are not a JSON object) or that fails on
// the mesh becomes an error result the model can read; Dispatch itself
// fails only when output is not the provider's shape at all.
func (c *Caller) Dispatch(ctx context.Context, ts *provider.Toolset, output json.RawMessage, opts ...DispatchOption) (Dispatched, error) {
	o := dispatchOptions{concurrency: defaultDispatchConcurrency}
	for _, opt := range opts {
		opt(&o)
	}
	calls, err := ts.ParseCalls(output)
	if err != nil {
		return Dispatched{}, err
	}
	d := Dispatched{Calls: calls, Outcomes: c.runCalls(ctx, ts, calls, o)}
	for i, call := range calls {
		item, err := c.resultItem(ctx, ts, call, &d.Outcomes[i])
		if err != nil {
			return Dispatched{}, envelope.AsProblem(err, envelope.CodeInternal)
		}
		d.Items = append(d.Items, item)
	}
	if d.Messages, err = providerresults.Messages(ts.Provider, d.Items); err != nil {
		return Dispatched{}, envelope.AsProblem(err, envelope.CodeInternal)
	}
	return d, nil
}

// dispatchSearchHits is how many tools Dispatch loads, at most, for one
// of a model's tool-search calls.
const dispatchSearchHits = 5

// isSearch reports whether a call of ts is its tool search.
func isSearch(ts *provider.Toolset) func(provider.ToolCall) bool {
	return func(call provider.ToolCall) bool {
		return call.Search != "" || (ts.SearchTool != "" && call.Name == ts.SearchTool)
	}
}

// resultItem is one call's result element: a tool search is answered
// from the mesh's search index (catalog.Catalog.Search, the ranking
// `toolmesh tools search` gives) with the offered tools that match best.
func (c *Caller) resultItem(ctx context.Context, ts *provider.Toolset, call provider.ToolCall, o *provider.Outcome) (json.RawMessage, error) {
	if !isSearch(ts)(call) {
		return providerresults.Item(ts.Provider, call, *o)
	}
	var found []string
	if call.Search != "" {
		hits, err := c.cat.Search(ctx, call.Search)
		if err != nil {
			c.log.Debug("dispatch: tool search failed; answering with no tools", "err", err)
		}
		for _, h := range hits {
			if _, offered := ts.Names.ProviderName(h.Tool.Spec.Name); offered && len(found) < dispatchSearchHits {
				found = append(found, h.Tool.Spec.Name)
			}
		}
	}
	data, _ := json.Marshal(map[string][]string{"tools": found})
	*o = provider.Outcome{Data: data, Problem: call.Problem}
	return ts.SearchResultItem(call, found)
}

// runCalls runs every runnable call, at most o.concurrency at a time;
// tool searches are answered by Dispatch itself.
func (c *Caller) runCalls(ctx context.Context, ts *provider.Toolset, calls []provider.ToolCall, o dispatchOptions) []provider.Outcome {
	search := isSearch(ts)
	outcomes := make([]provider.Outcome, len(calls))
	var mu sync.Mutex
	emit := func(i int, ev envelope.ToolEvent) {
		if o.onEvent != nil {
			mu.Lock()
			defer mu.Unlock()
			o.onEvent(DispatchEvent{Index: i, Call: calls[i], Event: ev})
		}
	}
	sem := make(chan struct{}, o.concurrency)
	var wg sync.WaitGroup
	for i, call := range calls {
		if search(call) {
			continue
		}
		if call.Problem != nil {
			outcomes[i] = provider.Outcome{Problem: call.Problem}
			emit(i, envelope.ErrorEvent(call.Problem))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				outcomes[i] = c.runOne(ctx, i, call, offered(ts, call.Tool, o), emit)
			case <-ctx.Done():
				p := envelope.AsProblem(ctx.Err(), envelope.CodeCancelled)
				outcomes[i] = provider.Outcome{Problem: p}
				emit(i, envelope.ErrorEvent(p))
			}
		}()
	}
	wg.Wait()
	return outcomes
}

// offered is o with the call options of one call to tool: the spec ts
// offered the model goes with it (WithSpec), so the call runs only on a
// worker giving that spec (docs/protocol.md §14.1).
func offered(ts *provider.Toolset, tool string, o dispatchOptions) dispatchOptions {
	spec, ok := ts.Spec(tool)
	if !ok {
		return o
	}
	o.callOpts = append(slices.Clip(o.callOpts), WithSpec(spec))
	return o
}

// runOne streams one call — through Config.Middleware and the retry
// policy, as every Stream goes — handing its events on and gathering them.
func (c *Caller) runOne(ctx context.Context, i int, call provider.ToolCall, o dispatchOptions, emit func(int, envelope.ToolEvent)) provider.Outcome {
	s, err := c.Stream(ctx, call.Tool, call.Args, o.callOpts...)
	if err != nil {
		p := envelope.AsProblem(err, envelope.CodeInternal)
		emit(i, envelope.ErrorEvent(p))
		return provider.Outcome{Problem: p}
	}
	var acc providerresults.Accumulator
	for ev := range s.Events() { // a failure is the terminal error event itself
		acc.Add(ev)
		emit(i, ev)
	}
	return acc.Outcome()
}
