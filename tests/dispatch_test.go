package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/worker"
)

// dispatchMesh is a real mesh hosting the tools a scripted model calls:
// a dotted name with an optional argument (strict mode sends it as null),
// a non-object result, a streaming tool whose output is only deltas, and
// a tool that always fails with a Problem.
func dispatchMesh(t *testing.T) *meshFixture {
	t.Helper()
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "fs.read", Description: "Read a file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)},
		func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
			var a struct{ Path string }
			if err := req.Bind(&a); err != nil {
				return nil, err
			}
			return map[string]string{"text": "contents of " + a.Path}, nil
		})
	register(t, f.w, envelope.ToolSpec{Name: "math.add",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)},
		func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
			var a struct{ A, B float64 }
			if err := req.Bind(&a); err != nil {
				return nil, err
			}
			return a.A + a.B, nil
		})
	register(t, f.w, envelope.ToolSpec{Name: "lines.emit", Streaming: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		func(_ context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
			for _, l := range []string{"one", "two"} {
				if err := emit.Delta(l); err != nil {
					return nil, err
				}
			}
			return json.RawMessage("null"), nil // the output is the deltas
		})
	register(t, f.w, envelope.ToolSpec{Name: "fail.always",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			return nil, envelope.NewProblem(envelope.CodeToolFailed, "the disk is on fire").WithFix("Try another disk", envelope.MaybeIncorrect)
		})
	return f
}

// scriptedModel writes one turn of tool calls in p's shape: the five
// calls of every turn, then an unknown tool and arguments that are not an
// object. Names come from the export's map, as a real model's would.
func scriptedModel(t *testing.T, ts *provider.Toolset) json.RawMessage {
	t.Helper()
	name := func(mesh string) string {
		n, ok := ts.Names.ProviderName(mesh)
		if !ok {
			t.Fatalf("%s not exported", mesh)
		}
		return n
	}
	// Strict mode makes the model send optional arguments as null.
	fsArgs := `{"path":"/a"}`
	if ts.Provider == provider.OpenAI || ts.Provider == provider.OpenAIResponses {
		fsArgs = `{"path":"/a","limit":null}`
	}
	type call struct{ id, name, args string }
	calls := []call{
		{"c1", name("fs.read"), fsArgs},
		{"c2", name("math.add"), `{"a":2,"b":40}`},
		{"c3", name("lines.emit"), `{}`},
		{"c4", name("fail.always"), `{}`},
		{"c5", "no_such_tool", `{}`},
		{"c6", name("math.add"), `[1,2]`},
	}
	var parts []string
	for _, c := range calls {
		var s string
		switch ts.Provider {
		case provider.OpenAI:
			s = fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}`, c.id, c.name, c.args)
		case provider.OpenAIResponses:
			s = fmt.Sprintf(`{"type":"function_call","id":"fc_%s","call_id":%q,"name":%q,"arguments":%q,"status":"completed"}`, c.id, c.id, c.name, c.args)
		case provider.Anthropic:
			s = fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, c.id, c.name, c.args)
		case provider.Gemini:
			s = fmt.Sprintf(`{"functionCall":{"id":%q,"name":%q,"args":%s}}`, c.id, c.name, c.args)
		}
		parts = append(parts, s)
	}
	list := "[" + strings.Join(parts, ",") + "]"
	switch ts.Provider {
	case provider.OpenAI:
		return json.RawMessage(`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":` + list + `}}]}`)
	case provider.OpenAIResponses:
		return json.RawMessage(`{"object":"response","output":[{"type":"reasoning","id":"rs_1","summary":[]},` + list[1:] + `}`)
	case provider.Anthropic:
		return json.RawMessage(`{"type":"message","role":"assistant","content":[{"type":"text","text":"On it."},` + list[1:] + `}`)
	}
	return json.RawMessage(`{"candidates":[{"content":{"role":"model","parts":` + list + `}}]}`)
}

// resultView is the common reading of one provider result item.
type resultView struct {
	id, text string
	isError  bool
}

func viewItem(t *testing.T, p provider.Provider, item json.RawMessage) resultView {
	t.Helper()
	var v struct {
		ToolCallID       string `json:"tool_call_id"`
		CallID           string `json:"call_id"`
		ToolUseID        string `json:"tool_use_id"`
		Content, Output  any
		IsError          bool `json:"is_error"`
		FunctionResponse struct {
			ID       string
			Response map[string]any
		} `json:"functionResponse"`
	}
	if err := json.Unmarshal(item, &v); err != nil {
		t.Fatal(err)
	}
	switch p {
	case provider.OpenAI:
		return resultView{v.ToolCallID, fmt.Sprint(v.Content), strings.HasPrefix(fmt.Sprint(v.Content), "error ")}
	case provider.OpenAIResponses:
		return resultView{v.CallID, fmt.Sprint(v.Output), strings.HasPrefix(fmt.Sprint(v.Output), "error ")}
	case provider.Anthropic:
		var blocks []struct{ Text string }
		b, _ := json.Marshal(v.Content)
		if err := json.Unmarshal(b, &blocks); err != nil || len(blocks) != 1 {
			t.Fatalf("tool_result content %s is not one text block", b)
		}
		return resultView{v.ToolUseID, blocks[0].Text, v.IsError}
	}
	r := v.FunctionResponse.Response
	if e, ok := r["error"]; ok {
		return resultView{v.FunctionResponse.ID, fmt.Sprint(e), true}
	}
	b, _ := json.Marshal(r["output"])
	return resultView{v.FunctionResponse.ID, string(b), false}
}

// A scripted model emits tool calls in each provider's shape; Dispatch
// runs them on a real mesh and the results come back in that shape, in
// the calls' order, failures included as errors the model can read.
func TestDispatchEndToEnd(t *testing.T) {
	f := dispatchMesh(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	specs := catalogSpecs(ctx, t, f.c, 300*time.Millisecond)
	want := []struct {
		text    string
		isError bool
	}{
		{`contents of /a`, false},
		{`42`, false},
		{`["one","two"]`, false},
		{"error tool_failed: the disk is on fire", true},
		{`error tool_not_found: no tool named "no_such_tool"`, true},
		{"error invalid_input:", true},
	}
	for _, p := range []provider.Provider{provider.OpenAI, provider.OpenAIResponses, provider.Anthropic, provider.Gemini} {
		t.Run(string(p), func(t *testing.T) {
			ts, err := provider.Export(specs, provider.ExportOptions{Provider: p})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			terminals := map[int]int{}
			d, err := f.c.Dispatch(ctx, ts, scriptedModel(t, ts), caller.WithConcurrency(3), caller.OnEvent(func(e caller.DispatchEvent) {
				if e.Event.IsTerminal() {
					mu.Lock()
					terminals[e.Index]++
					mu.Unlock()
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Items) != len(want) {
				t.Fatalf("%d result items, want %d", len(d.Items), len(want))
			}
			for i, item := range d.Items {
				got := viewItem(t, p, item)
				if got.id != fmt.Sprintf("c%d", i+1) {
					t.Errorf("item %d answers call %q: out of order", i, got.id)
				}
				if !strings.Contains(got.text, want[i].text) || got.isError != want[i].isError {
					t.Errorf("item %d = %q (error %v), want %q (error %v)", i, got.text, got.isError, want[i].text, want[i].isError)
				}
				if terminals[i] != 1 {
					t.Errorf("call %d: %d terminal events streamed, want 1", i, terminals[i])
				}
			}
			wantMsgs := map[provider.Provider]int{provider.Anthropic: 1, provider.Gemini: 1}[p]
			if wantMsgs == 0 {
				wantMsgs = len(want)
			}
			if len(d.Messages) != wantMsgs {
				t.Errorf("%d messages, want %d", len(d.Messages), wantMsgs)
			}
		})
	}
}

// Dispatch runs calls concurrently but never more than the bound.
func TestDispatchBoundsConcurrency(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	var mu sync.Mutex
	inflight, peak := 0, 0
	release := make(chan struct{})
	register(t, f.w, envelope.ToolSpec{Name: "gate"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		mu.Lock()
		inflight++
		if inflight > peak {
			peak = inflight
		}
		if peak == 2 && inflight == 2 {
			select {
			case <-release:
			default:
				close(release) // two ran at once: concurrency is real
			}
		}
		mu.Unlock()
		defer func() { mu.Lock(); inflight--; mu.Unlock() }()
		select {
		case <-release:
			return map[string]bool{"ok": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	ts, err := provider.Export([]envelope.ToolSpec{{Name: "gate"}}, provider.ExportOptions{Provider: provider.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for i := range 6 {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":"t%d","name":"gate","input":{}}`, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := f.c.Dispatch(ctx, ts, json.RawMessage("["+strings.Join(blocks, ",")+"]"), caller.WithConcurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range d.Outcomes {
		if o.Problem != nil {
			t.Fatalf("call %d: %v", i, o.Problem)
		}
	}
	if peak != 2 {
		t.Fatalf("peak concurrency %d, want exactly the bound 2", peak)
	}
}
