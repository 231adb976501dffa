package envelope

import (
	"bytes"
	"encoding/json"
	"flag"
	"testing"

	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/internal/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, name, got, *update)
}

// goldenRoundTrip encodes v and compares the bytes with testdata/name;
// decoded into back (a pointer to a new value of v's type) and encoded
// again, they must come out the same.
func goldenRoundTrip(t *testing.T, name string, v, back any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, name, b)
	if err := json.Unmarshal(b, back); err != nil {
		t.Fatalf("decode own output: %v", err)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(again, b) {
		t.Errorf("round trip changed the bytes:\n %s\n %s", b, again)
	}
}

func ptr[T any](v T) *T { return &v }

// fixedProblem is a Problem with a fixed instance, so goldens stay stable.
func fixedProblem(code Code, detail string) *Problem {
	p := NewProblem(code, detail)
	p.Instance = "urn:uuid:00000000-0000-4000-8000-000000000000"
	return p
}

func TestGoldenEvents(t *testing.T) {
	cases := []struct {
		name string
		ev   ToolEvent
	}{
		{"event_start.json", startEvent("fs.read", "01JD5Q7ZK3M8X2V4T6N9P0R1S2", map[string]any{"worker_id": "w1"})},
		{"event_start_minimal.json", startEvent("echo", "", nil)},
		{"event_progress.json", ProgressEvent(40, "indexing")},
		{"event_progress_empty.json", ToolEvent{Type: EventProgress}},
		{"event_progress_log.json", LogEvent(LogMessage{Level: "info", Logger: "fs", Data: json.RawMessage(`"Tool execution started"`)})},
		{"event_delta.json", ToolEvent{Type: EventDelta, Data: json.RawMessage(`{"token":"hel"}`)}},
		{"event_result.json", ToolEvent{Type: EventResult, Data: json.RawMessage(`{"lines":3}`)}},
		{"event_result_null.json", ToolEvent{Type: EventResult}},
		{"event_error.json", ErrorEvent(fixedProblem(CodeWorkerLost, "worker w1 went silent"))},
		{"event_error_bare.json", ToolEvent{Type: EventError, Code: "auth_required", Message: "token expired"}},
		{"event_question.json", questionEvent("Delete 3 files?", Question{ID: "Q1", WorkerID: "w1", TimeoutMS: 300000,
			Schema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`)})},
		{"event_question_approval.json", questionEvent("Approve running fs.delete?", Question{ID: "Q2", WorkerID: "w1",
			Schema:   json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve"}},"required":["approve"]}`),
			Approval: &Approval{Tool: "fs.delete", Args: json.RawMessage(`{"path":"/tmp/x"}`)}})},
		{"event_question_sampling.json", questionEvent("user: What is the mesh?", Question{ID: "Q3", WorkerID: "w1", TimeoutMS: 300000,
			Schema:   SamplingAnswerSchema(),
			Sampling: json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"What is the mesh?"}}],"maxTokens":100}`)})},
		{"event_answered.json", answeredEvent("Q1", ActionDecline)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var back ToolEvent
			goldenRoundTrip(t, c.name, c.ev, &back)
			if back.IsTerminal() != (c.ev.Type == EventResult || c.ev.Type == EventError) {
				t.Errorf("IsTerminal wrong for %s", c.ev.Type)
			}
		})
	}
}

func TestGoldenResponses(t *testing.T) {
	pong, err := successResponse("1", json.RawMessage(`{"command":"pong"}`))
	if err != nil {
		t.Fatal(err)
	}
	withData, err := errorResponseWithData("3", "path_not_found", "no such path", json.RawMessage(`{"path":"/nope"}`))
	if err != nil {
		t.Fatal(err)
	}
	gap := wire.Completion{PendingFiles: []string{"b.go"}, SkippedFiles: []wire.SkippedFile{{File: "c.bin", Reason: "binary"}}}
	partialData, err := gap.Apply(json.RawMessage(`{"matches":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := wire.Completion{Complete: true, NoFilesMatchedScope: true}.Apply(json.RawMessage(`{"matches":[]}`))
	cases := []struct {
		name string
		r    Response
	}{
		{"response_pong.json", pong},
		{"response_error.json", errorResponse("2", "no_lsp_server", "no language server for .zig")},
		{"response_error_with_data.json", withData},
		{"response_problem.json", ProblemResponse("4", fixedProblem(CodeTimeout, "budget of 5s spent"))},
		{"response_partial.json", Response{ID: "5", Success: true, Data: partialData}},
		{"response_empty_scope.json", Response{ID: "6", Success: true, Data: empty}},
		{"response_non_object.json", must(successResponse("8", json.RawMessage(`[1,2,3]`)))},
		{"response_result_collision.json", must(successResponse("9", json.RawMessage(`{"success":true,"message":"Entities deleted successfully"}`)))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			goldenRoundTrip(t, c.name, c.r, new(Response))
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The Problem format's own worked example must come out byte for byte.
func TestSeedPong(t *testing.T) {
	r := must(successResponse("1", json.RawMessage(`{"command":"pong"}`)))
	b, _ := json.Marshal(r)
	if string(b) != `{"id":"1","success":true,"command":"pong"}` {
		t.Fatalf("got %s", b)
	}
}

func TestGoldenProblems(t *testing.T) {
	// That worked example, rebuilt under the format's own base URI.
	seed := NewProblem(CodeInvalidInput, "invalid input: divisor cannot be zero")
	seed.Type = "https://zircote.com/rust-template/errors/invalid-input/v1"
	seed.Instance = "urn:rust_template:invalid-input"
	seed.WithFix("Correct the input so it satisfies the documented constraints, then retry.", MaybeIncorrect)
	seed.CodeActions = []CodeAction{{Title: "Replace the offending input with a valid value", Kind: "quickfix", Applicability: MaybeIncorrect}}
	b, err := json.Marshal(seed)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "problem_seed_invalid_input.json", b)

	over := fixedProblem(CodeOverloaded, "all 4 slots busy").WithExtension("slots", 4)
	golden(t, "problem_overloaded.json", must(json.Marshal(over)))

	sch := must(CompileSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1},"s":{"type":"string"}},"required":["n","s"],"additionalProperties":false}`)))
	v := sch.Validate(json.RawMessage(`{"n":0,"x":1}`))
	vp := ValidationProblem(CodeInvalidInput, "args", v)
	vp.Instance = "urn:uuid:00000000-0000-4000-8000-000000000000"
	golden(t, "problem_violations.json", must(json.Marshal(vp)))
}

func TestGoldenFormatsAndSpec(t *testing.T) {
	cases := []struct {
		name string
		v    any
	}{
		{"format_free.json", ResponseFormat{Type: FormatFree}},
		{"format_json_object.json", ResponseFormat{Type: FormatJSONObject}},
		{"toolspec.json", ToolSpec{Name: "files.search", Title: "Search files", Description: "Search files for a pattern", Version: "1.2.0",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`),
			OutputSchema: json.RawMessage(`{"type":"array"}`),
			Annotations:  &Annotations{ReadOnly: ptr(true)}, Streaming: true, Tags: []string{"fs"}, Timeout: Duration(30e9)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			goldenRoundTrip(t, c.name, c.v, newOf(c.v))
		})
	}
}

func newOf(v any) any {
	switch v.(type) {
	case ResponseFormat:
		return new(ResponseFormat)
	case ToolSpec:
		return new(ToolSpec)
	}
	panic("no decoder for test value")
}

// Question and answered events with a member missing or of the wrong
// shape are refused, naming the member.
func TestQuestionEventRefusals(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"no id", `{"type":"question","message":"m","schema":{},"worker_id":"w"}`, "question_id is required"},
		{"schema not object", `{"type":"question","question_id":"Q","message":"m","schema":[],"worker_id":"w"}`, "schema is required"},
		{"bad timeout", `{"type":"question","question_id":"Q","message":"m","schema":{},"worker_id":"w","timeout_ms":-1}`, "timeout_ms"},
		{"bad action", `{"type":"answered","question_id":"Q","action":"maybe"}`, "action"},
		{"no action", `{"type":"answered","question_id":"Q"}`, "action"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ev ToolEvent
			err := json.Unmarshal([]byte(c.in), &ev)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
				t.Fatalf("err %v, want one naming %q", err, c.want)
			}
		})
	}
}
