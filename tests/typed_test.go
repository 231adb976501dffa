package tests

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

type greetIn struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times int    `json:"times" toolmesh:"default=2,minimum=1,maximum=5"`
	Tone  string `json:"tone,omitempty" toolmesh:"enum=warm|cold"`
	Style struct {
		Punct string `json:"punct" toolmesh:"default=!"`
	} `json:"style,omitzero"`
}

type greetOut struct {
	Text string `json:"text"`
	Len  int    `json:"len" toolmesh:"minimum=0,maximum=40"`
}

// TestTypedTool registers a typed tool in one statement and checks what
// its inferred schema does: bad input refused before the handler runs,
// defaults applied at the top level and in a nested struct, an enum from
// a tag, and the output schema enforced.
func TestTypedTool(t *testing.T) {
	m := meshtest.New(t)
	var runs atomic.Int64
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "greet"}, func(_ context.Context, _ *worker.Request, in greetIn) (greetOut, error) {
		runs.Add(1)
		s := strings.Repeat("hello "+in.Name+in.Style.Punct+" ", in.Times)
		return greetOut{Text: s, Len: len(s)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := caller.CallAs[greetOut](ctx, m.Caller, "greet", map[string]any{"name": "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello ann! hello ann! "; got.Text != want {
		t.Errorf("defaults not applied: got %q, want %q", got.Text, want)
	}
	bad := []struct {
		name    string
		args    any
		pointer string
	}{
		{"missing required", map[string]any{}, "/name"},
		{"wrong type", map[string]any{"name": 3}, "/name"},
		{"below minimum", map[string]any{"name": "a", "times": 0}, "/times"},
		{"not in enum", map[string]any{"name": "a", "tone": "hot"}, "/tone"},
		{"unknown member", map[string]any{"name": "a", "x": 1}, "/x"},
		{"nested wrong type", map[string]any{"name": "a", "style": map[string]any{"punct": 1}}, "/style/punct"},
	}
	for _, c := range bad {
		_, err := caller.CallAs[greetOut](ctx, m.Caller, "greet", c.args)
		p := wantCode(t, err, envelope.CodeInvalidInput)
		if !strings.Contains(p.Detail, c.pointer) {
			t.Errorf("%s: detail %q does not point at %s", c.name, p.Detail, c.pointer)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times; bad input must not reach it", n)
	}
	// Output validation: 5 × "hello " + 12-letter name + "!" is past maximum 40.
	_, err = caller.CallAs[greetOut](ctx, m.Caller, "greet", map[string]any{"name": "abcdefghijkl", "times": 5})
	wantCode(t, err, envelope.CodeOutputInvalid)
}

// TestTypedSchemaInferred checks the wire schema AddTool publishes.
func TestTypedSchemaInferred(t *testing.T) {
	m := meshtest.New(t)
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "greet"}, func(context.Context, *worker.Request, greetIn) (greetOut, error) {
		return greetOut{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var in struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(m.Worker.Specs()[0].InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	if in.Type != "object" || len(in.Required) != 1 || in.Required[0] != "name" {
		t.Errorf("type %q required %v: want an object requiring only name (times has a default)", in.Type, in.Required)
	}
	for prop, want := range map[string]string{
		"name":  `"description":"who to greet"`,
		"times": `"default":2`,
		"tone":  `"enum":["warm","cold"]`,
	} {
		if !strings.Contains(string(in.Properties[prop]), want) {
			t.Errorf("property %s is %s, want it to contain %s", prop, in.Properties[prop], want)
		}
	}
}

// TestTypedNonObjectResults: a number or a list reaches Call as
// {"result": …} and CallAs as the value itself.
func TestTypedNonObjectResults(t *testing.T) {
	m := meshtest.New(t)
	type pair struct{ A, B int }
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "add"}, func(_ context.Context, _ *worker.Request, in pair) (int, error) {
		return in.A + in.B, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "split"}, func(_ context.Context, _ *worker.Request, in struct {
		S string `json:"s"`
	}) ([]string, error) {
		return strings.Fields(in.S), nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sum, err := caller.CallAs[int](ctx, m.Caller, "add", pair{2, 3})
	if err != nil || sum != 5 {
		t.Errorf("add: %v, %v; want 5", sum, err)
	}
	resp, err := m.Caller.Call(ctx, "add", pair{2, 3})
	if err != nil || string(resp.Data) != `{"result":5}` {
		t.Errorf("Call add: %s, %v; want {\"result\":5}", resp.Data, err)
	}
	words, err := caller.CallAs[[]string](ctx, m.Caller, "split", map[string]string{"s": "a b  c"})
	if err != nil || strings.Join(words, ",") != "a,b,c" {
		t.Errorf("split: %v, %v", words, err)
	}
	_, err = caller.CallAs[string](ctx, m.Caller, "add", pair{1, 1})
	wantCode(t, err, envelope.CodeOutputInvalid)
}

// TestTypedStream: a streaming typed tool's deltas are its delta type.
func TestTypedStream(t *testing.T) {
	m := meshtest.New(t)
	type tick struct {
		I int `json:"i"`
	}
	if err := worker.AddStreamTool(m.Worker, envelope.ToolSpec{Name: "ticks"}, func(_ context.Context, _ *worker.Request, in struct {
		N int `json:"n" toolmesh:"default=3"`
	}, emit worker.TypedEmitter[tick]) (int, error) {
		for i := 1; i <= in.N; i++ {
			if err := emit.Delta(tick{i}); err != nil {
				return 0, err
			}
		}
		return in.N, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !m.Worker.Specs()[0].Streaming {
		t.Error("AddStreamTool did not mark the spec streaming")
	}
	s, err := m.Caller.Stream(context.Background(), "ticks", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var deltas []string
	eachEvent(t, s, func(ev envelope.ToolEvent) {
		if ev.Type == envelope.EventDelta {
			deltas = append(deltas, string(ev.Data))
		}
	})
	if got := strings.Join(deltas, ""); got != `{"i":1}{"i":2}{"i":3}` {
		t.Errorf("deltas %s", got)
	}
}

// TestTypedBadTagRefused: a malformed tag is a registration error, not a
// schema that silently means something else.
func TestTypedBadTagRefused(t *testing.T) {
	m := meshtest.New(t)
	type bad struct {
		N int `json:"n" toolmesh:"minimum=low"`
	}
	err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "bad"}, func(context.Context, *worker.Request, bad) (int, error) { return 0, nil })
	if p := problemOf(t, err); p.Code != envelope.CodeInvalidConfig {
		t.Errorf("got %s, want invalid_config", p.Code)
	}
	type badDefault struct {
		N int `json:"n" toolmesh:"default=many"`
	}
	err = worker.AddTool(m.Worker, envelope.ToolSpec{Name: "bad2"}, func(context.Context, *worker.Request, badDefault) (int, error) { return 0, nil })
	if p := problemOf(t, err); p.Code != envelope.CodeInvalidConfig {
		t.Errorf("default of the wrong type: got %s, want invalid_config", p.Code)
	}
}
