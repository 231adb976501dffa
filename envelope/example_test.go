package envelope_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolmesh/toolmesh/envelope"
)

// The package doc's worked example: a tool described by a ToolSpec, its
// arguments checked against the input schema, a failure reported as a
// Problem, and the caller's side of both.
func Example() {
	spec := envelope.ToolSpec{
		Name:        "files.read",
		Description: "Read a text file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}
	input, _, err := spec.Compile()
	if err != nil {
		fmt.Println("bad spec:", err)
		return
	}
	if v := input.Validate(json.RawMessage(`{"path":3}`)); len(v) > 0 {
		p := envelope.ValidationProblem(envelope.CodeInvalidInput, "args", v)
		fmt.Println(p.Code, v[0].Pointer)
	}

	p := envelope.NewProblem(envelope.CodeOverloaded, "the worker is busy").WithRetryAfter(2)
	resp := envelope.ProblemResponse("call-1", p)
	wire, _ := json.Marshal(resp)
	var got envelope.Response
	if err := json.Unmarshal(wire, &got); err != nil {
		fmt.Println(err)
		return
	}
	code, _ := got.Get("code")
	fmt.Println(got.Success, string(code))
	wait, transient := p.RetryAfterDuration()
	fmt.Println(transient, wait)
	// Output:
	// invalid_input /path
	// false "overloaded"
	// true 2s
}

// A handler returns a Problem as its error; the caller gets it back as an
// error that also matches the context errors it stands for.
func ExampleProblem() {
	var err error = envelope.NewProblem(envelope.CodeTimeout, "the search took longer than 30s").
		WithFix("Narrow the query or raise the call's timeout.", envelope.MaybeIncorrect)

	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	p := envelope.AsProblem(err, envelope.CodeInternal)
	fmt.Println(p.Code, "-", p.Detail)
	fmt.Println(p.SuggestedFix.Description)
	// Output:
	// true
	// timeout - the search took longer than 30s
	// Narrow the query or raise the call's timeout.
}

// A streaming call's events: progress along the way, then exactly one
// terminal event (a result or an error).
func ExampleToolEvent() {
	for _, ev := range []envelope.ToolEvent{
		envelope.ProgressEvent(50, "half way"),
		envelope.ToolEvent{Type: envelope.EventDelta, Data: json.RawMessage(`"partial "`)},
		envelope.ToolEvent{Type: envelope.EventResult, Data: json.RawMessage(`{"text":"partial answer"}`)},
	} {
		b, _ := json.Marshal(ev)
		fmt.Println(ev.IsTerminal(), string(b))
	}
	// Output:
	// false {"type":"progress","pct":50,"message":"half way"}
	// false {"type":"delta","data":"partial "}
	// true {"type":"result","data":{"text":"partial answer"}}
}

// ParseEvent reads an event from a buffer the reader owns, such as a NATS
// message's payload, without copying its data.
func ExampleParseEvent() {
	msg := []byte(`{"type":"error","code":"tool_not_found","message":"no tool named files.raed"}`)
	ev, err := envelope.ParseEvent(msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev.Type, ev.Problem().Code)
	// Output:
	// error tool_not_found
}

// AppendJSON writes events into one reused buffer, as a relay or a tight
// loop does, instead of allocating per event.
func ExampleToolEvent_AppendJSON() {
	buf := make([]byte, 0, 256)
	for i := range 3 {
		buf, _ = envelope.ProgressEvent(float64(i*50), "").AppendJSON(buf[:0])
		fmt.Println(string(buf))
	}
	// Output:
	// {"type":"progress","pct":0}
	// {"type":"progress","pct":50}
	// {"type":"progress","pct":100}
}
