package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/codes"
)

// Each malformed input is rejected with an error that names the field.
func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name, in, wantField string
		into                func() any
	}{
		{"event missing type", `{"data":1}`, "type", func() any { return new(ToolEvent) }},
		{"event unknown type", `{"type":"bogus"}`, "type", func() any { return new(ToolEvent) }},
		{"event type not string", `{"type":7}`, "type", func() any { return new(ToolEvent) }},
		{"progress pct high", `{"type":"progress","pct":101}`, "pct", func() any { return new(ToolEvent) }},
		{"progress pct low", `{"type":"progress","pct":-0.5}`, "pct", func() any { return new(ToolEvent) }},
		{"progress pct string", `{"type":"progress","pct":"x"}`, "pct", func() any { return new(ToolEvent) }},
		{"progress log bad level", `{"type":"progress","log":{"level":"loud","data":"x"}}`, "log", func() any { return new(ToolEvent) }},
		{"progress log without data", `{"type":"progress","log":{"level":"info"}}`, "log", func() any { return new(ToolEvent) }},
		{"progress log not object", `{"type":"progress","log":"x"}`, "log", func() any { return new(ToolEvent) }},
		{"question sampling not object", `{"type":"question","question_id":"Q1","message":"m","schema":{"type":"object"},"worker_id":"w","sampling":[1]}`, "sampling", func() any { return new(ToolEvent) }},
		{"error without code", `{"type":"error","message":"x"}`, "code", func() any { return new(ToolEvent) }},
		{"error empty code", `{"type":"error","code":""}`, "code", func() any { return new(ToolEvent) }},
		{"start without tool", `{"type":"start"}`, "tool_id", func() any { return new(ToolEvent) }},
		{"delta without data", `{"type":"delta"}`, "data", func() any { return new(ToolEvent) }},
		{"event not object", `[1]`, "event", func() any { return new(ToolEvent) }},
		{"format schema missing", `{"type":"json_schema"}`, "json_schema", func() any { return new(ResponseFormat) }},
		{"format bad name", `{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}`, "name", func() any { return new(ResponseFormat) }},
		{"format schema not object", `{"type":"json_schema","json_schema":{"name":"a","schema":3}}`, "schema", func() any { return new(ResponseFormat) }},
		{"response missing id", `{"success":true}`, "id", func() any { return new(Response) }},
		{"response missing success", `{"id":"1"}`, "success", func() any { return new(Response) }},
		{"response error without code", `{"id":"1","success":false}`, "code", func() any { return new(Response) }},
		{"response id not string", `{"id":1,"success":true}`, "id", func() any { return new(Response) }},
		{"response duplicate", `{"id":"1","success":true,"a":1,"a":2}`, "duplicate", func() any { return new(Response) }},
		{"problem negative retry", `{"retry_after":-1}`, "retry_after", func() any { return new(Problem) }},
		{"problem retry string", `{"retry_after":"soon"}`, "retry_after", func() any { return new(Problem) }},
		{"spec bad name", `{"name":"a b"}`, "name", func() any { return new(ToolSpec) }},
		{"spec long segment", `{"name":"` + strings.Repeat("a", 65) + `"}`, "name", func() any { return new(ToolSpec) }},
		{"spec empty segment", `{"name":"a..b"}`, "name", func() any { return new(ToolSpec) }},
		{"spec too long", `{"name":"` + strings.Repeat("abcdefgh.", 15) + `a"}`, "name", func() any { return new(ToolSpec) }},
		{"spec input not object schema", `{"name":"a","input_schema":{"type":"string"}}`, "input_schema", func() any { return new(ToolSpec) }},
		{"spec input invalid schema", `{"name":"a","input_schema":{"type":"object","minProperties":"x"}}`, "input_schema", func() any { return new(ToolSpec) }},
		{"spec remote ref", `{"name":"a","input_schema":{"type":"object","$ref":"https://example.com/s.json"}}`, "input_schema", func() any { return new(ToolSpec) }},
		{"spec file ref", `{"name":"a","input_schema":{"type":"object","$ref":"file:///etc/passwd"}}`, "input_schema", func() any { return new(ToolSpec) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := json.Unmarshal([]byte(c.in), c.into())
			if err == nil {
				t.Fatalf("decoded %s without error", c.in)
			}
			if !strings.Contains(err.Error(), c.wantField) {
				t.Errorf("error %q does not name %q", err, c.wantField)
			}
		})
	}
}

func TestToolNames(t *testing.T) {
	for _, ok := range []string{"echo", "fs.read", "gmail.users.messages.list", "A-b_9", strings.Repeat("a", 64)} {
		if err := ValidateToolName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".a", "a.", "a b", "a*", "a>", "ä", "a/b"} {
		if ValidateToolName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRegistry(t *testing.T) {
	required := []Code{CodeInvalidInput, CodeToolNotFound, CodeTimeout, CodeCancelled, CodeWorkerLost, CodeOverloaded,
		CodeHandlerError, CodeMissingTerminal, CodeStreamGap, CodeOutputInvalid, CodeDryRunUnsupported,
		CodePaginationUnsupported, CodeToolFailed, CodePayloadTooLarge, CodeUnauthorized, CodeConnectionLost, CodeInvalidConfig}
	exits := map[int]Code{}
	for _, c := range required {
		info, ok := codes.Lookup(c)
		if !ok {
			t.Fatalf("%s missing from registry", c)
		}
		if info.Title == "" || info.Status == 0 || info.ExitCode == 0 || info.Fix == "" {
			t.Errorf("%s: incomplete entry %+v", c, info)
		}
		if other, dup := exits[info.ExitCode]; dup {
			t.Errorf("%s and %s share exit code %d", c, other, info.ExitCode)
		}
		exits[info.ExitCode] = c
		p := NewProblem(c, "x")
		if (p.RetryAfter != nil) != info.Transient {
			t.Errorf("%s: retry_after set=%v, transient=%v", c, p.RetryAfter != nil, info.Transient)
		}
		b, _ := json.Marshal(p)
		if !strings.Contains(string(b), `"retry_after":`) {
			t.Errorf("%s: retry_after not serialised: %s", c, b)
		}
	}
	if len(codes.All()) < len(required) {
		t.Errorf("codes.All() lists %d", len(codes.All()))
	}
	if got := NewProblem(CodeTimeout, "x").Type; got != "https://toolmesh.dev/problems/timeout/v1" {
		t.Errorf("type = %s", got)
	}
	if NewProblem(CodeTimeout, "").Instance == NewProblem(CodeTimeout, "").Instance {
		t.Error("instance must be unique per occurrence")
	}
	if p := NewProblem("made_up", "x"); p.Code != CodeInternal || !strings.Contains(p.Detail, "made_up") {
		t.Errorf("unregistered code gave %+v", p)
	}
}

// Every Code constant is in the registry, and the registry holds nothing
// else: the constants and internal/codes's table are one list.
func TestEveryCodeIsRegistered(t *testing.T) {
	all := []Code{
		CodeInvalidInput, CodeToolNotFound, CodeTimeout, CodeCancelled, CodeWorkerLost, CodeOverloaded,
		CodeHandlerError, CodeMissingTerminal, CodeStreamGap, CodeOutputInvalid, CodeDryRunUnsupported,
		CodePaginationUnsupported, CodeToolFailed, CodePayloadTooLarge, CodeUnauthorized, CodeForbidden,
		CodeConnectionLost, CodeInvalidConfig, CodeInternal, CodeTaskNotFound, CodeTaskExpired, CodeInputRequired,
		CodeInputTimeout, CodeDeclined, CodeTaskQuotaExceeded, CodeToolConflict, CodeSandboxReadDenied,
		CodeSandboxWriteDenied, CodeSandboxExecDenied, CodeSandboxConnectDenied, CodeSandboxLimit,
	}
	for _, c := range all {
		if _, ok := codes.Lookup(c); !ok {
			t.Errorf("%s is not in the registry", c)
		}
	}
	if n := len(codes.All()); n != len(all) {
		t.Errorf("the registry holds %d codes, the constants are %d", n, len(all))
	}
}

func TestApplicabilityDefaultsToUnspecified(t *testing.T) {
	var f SuggestedFix
	if err := json.Unmarshal([]byte(`{"description":"x","applicability":"apply_blindly"}`), &f); err != nil {
		t.Fatal(err)
	}
	if f.Applicability != Unspecified {
		t.Errorf("unknown marker became %q", f.Applicability)
	}
	var a CodeAction
	_ = json.Unmarshal([]byte(`{"title":"x"}`), &a)
	if b, _ := json.Marshal(a); !strings.Contains(string(b), `"applicability":"unspecified"`) {
		t.Errorf("missing marker rendered %s", b)
	}
}

// A result object that has a Response's own member (id, success) is
// carried whole under "result", as a non-object result is: the result-
// collision rule of docs/protocol.md §5.6. Only an error's extra members,
// which the sender chooses, are refused.
func TestResultCollisionWrapsWhole(t *testing.T) {
	cases := []struct{ data, want string }{
		{`{"id":"x"}`, `{"id":"1","success":true,"result":{"id":"x"}}`},
		{`{"success":true,"message":"Entities deleted successfully"}`, `{"id":"1","success":true,"result":{"success":true,"message":"Entities deleted successfully"}}`},
		{`{"a":1,"success":"yes"}`, `{"id":"1","success":true,"result":{"a":1,"success":"yes"}}`},
		{`{"a":1}`, `{"id":"1","success":true,"a":1}`},
	}
	for _, c := range cases {
		for name, build := range map[string]func() (Response, error){
			"Success": func() (Response, error) { return successResponse("1", json.RawMessage(c.data)) },
			"ResponseFromEvent": func() (Response, error) {
				var ev ToolEvent
				if err := json.Unmarshal([]byte(`{"type":"result","data":`+c.data+`}`), &ev); err != nil {
					return Response{}, err
				}
				return ResponseFromEvent("1", ev)
			},
		} {
			r, err := build()
			if err != nil {
				t.Errorf("%s(%s): %v", name, c.data, err)
				continue
			}
			if b, err := json.Marshal(r); err != nil || string(b) != c.want {
				t.Errorf("%s(%s) = %s, %v; want %s", name, c.data, b, err, c.want)
			}
		}
	}
}

func TestErrorExtraRefusesReservedMembers(t *testing.T) {
	for _, data := range []string{`{"id":"x"}`, `{"a":1,"success":false}`} {
		if _, err := errorResponseWithData("1", "c", "m", json.RawMessage(data)); err == nil {
			t.Errorf("errorResponseWithData accepted %s", data)
		}
	}
	if _, err := errorResponseWithData("1", "c", "m", json.RawMessage(`{"code":"other"}`)); err == nil {
		t.Error("extra may not overwrite code")
	}
}

func TestSchemaDrafts(t *testing.T) {
	d7 := must(CompileSchema(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"integer"}},"definitions":{"x":{"type":"string"}}}`)))
	if v := d7.Validate(json.RawMessage(`{"a":"no"}`)); len(v) != 1 || v[0].Pointer != "/a" {
		t.Errorf("draft-07: %+v", v)
	}
	local := must(CompileSchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/pos"}},"$defs":{"pos":{"type":"integer","minimum":1}}}`)))
	if v := local.Validate(json.RawMessage(`{"a":0}`)); len(v) != 1 || v[0].Pointer != "/a" {
		t.Errorf("local $ref: %+v", v)
	}
	if v := local.Validate(json.RawMessage(`{"a":`)); len(v) != 1 {
		t.Errorf("invalid JSON: %+v", v)
	}
}

// A timeout or cancelled Problem is the context error it stands for, so a
// caller's errors.Is(err, context.DeadlineExceeded) works across the wire.
func TestProblemIsContextError(t *testing.T) {
	cases := []struct {
		code                Code
		deadline, cancelled bool
	}{
		{CodeTimeout, true, false},
		{CodeCancelled, false, true},
		{CodeOverloaded, false, false},
		{CodeToolFailed, false, false},
	}
	for _, c := range cases {
		var err error = fmt.Errorf("call: %w", NewProblem(c.code, "x"))
		if got := errors.Is(err, context.DeadlineExceeded); got != c.deadline {
			t.Errorf("%s: errors.Is(DeadlineExceeded) = %v", c.code, got)
		}
		if got := errors.Is(err, context.Canceled); got != c.cancelled {
			t.Errorf("%s: errors.Is(Canceled) = %v", c.code, got)
		}
		var p *Problem
		if !errors.As(err, &p) || p.Code != c.code {
			t.Errorf("%s: errors.As lost the Problem", c.code)
		}
	}
}

func TestProblemRetryAfterDuration(t *testing.T) {
	cases := []struct {
		p    *Problem
		want time.Duration
		ok   bool
	}{
		{NewProblem(CodeToolFailed, "x"), 0, false},
		{NewProblem(CodeOverloaded, "x"), time.Second, true},
		{NewProblem(CodeOverloaded, "x").WithRetryAfter(0.25), 250 * time.Millisecond, true},
		{NewProblem(CodeConnectionLost, "x"), 2 * time.Second, true},
	}
	for _, c := range cases {
		if d, ok := c.p.RetryAfterDuration(); d != c.want || ok != c.ok {
			t.Errorf("%s: RetryAfterDuration() = %v, %v; want %v, %v", c.p.Code, d, ok, c.want, c.ok)
		}
	}
	if b, _ := json.Marshal(NewProblem(CodeOverloaded, "x").WithRetryAfter(0.25)); !strings.Contains(string(b), `"retry_after":0.25`) {
		t.Errorf("the wire form changed: %s", b)
	}
}

func TestProgressPercent(t *testing.T) {
	if pct, ok := ProgressEvent(40, "m").Percent(); pct != 40 || !ok {
		t.Errorf("Percent() = %v, %v", pct, ok)
	}
	if _, ok := (ToolEvent{Type: EventProgress}).Percent(); ok {
		t.Error("a progress event without pct reported one")
	}
}

func TestAsProblem(t *testing.T) {
	p := NewProblem(CodeOverloaded, "busy")
	if AsProblem(p, CodeInternal) != p {
		t.Error("a Problem must pass through")
	}
	if AsProblem(json.Unmarshal([]byte("x"), new(int)), CodeHandlerError).Code != CodeHandlerError {
		t.Error("fallback code not used")
	}
}

// Escaped member names and tags mean the same strings as plain ones: the
// allocation-free fast paths must not reject or miss them.
func TestEscapedNamesDecode(t *testing.T) {
	ev, err := ParseEvent([]byte(`{"type":"r\u0065sult","d\u0061ta":{"n":1}}`))
	if err != nil {
		t.Fatalf("escaped event: %v", err)
	}
	if ev.Type != EventResult || string(ev.Data) != `{"n":1}` {
		t.Errorf("escaped event decoded as %+v", ev)
	}
	if r, err := successResponse("1", json.RawMessage(`{"\u0069d":"x"}`)); err != nil || string(r.Data) != `{"result":{"\u0069d":"x"}}` {
		t.Errorf("an escaped id was not wrapped like a plain one: %s, %v", r.Data, err)
	}
}

// ParseEvent aliases the input; UnmarshalJSON copies it, so the
// caller may reuse its buffer.
func TestUnmarshalCopiesParseAliases(t *testing.T) {
	buf := []byte(`{"type":"result","data":{"n":1}}`)
	var copied ToolEvent
	if err := copied.UnmarshalJSON(buf); err != nil {
		t.Fatal(err)
	}
	aliased, err := ParseEvent(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf[bytesIndex(buf, `{"n":1}`):], `{"n":2}`)
	if string(copied.Data) != `{"n":1}` {
		t.Errorf("UnmarshalJSON result changed with the input buffer: %s", copied.Data)
	}
	if string(aliased.Data) != `{"n":2}` {
		t.Errorf("ParseEvent copied the data: %s", aliased.Data)
	}
}

func bytesIndex(b []byte, s string) int { return strings.Index(string(b), s) }

// A spec has no binding member: one in a spec's JSON (which no worker
// sends) is not read, and the spec never writes one.
func TestSpecCarriesNoBinding(t *testing.T) {
	var s ToolSpec
	if err := json.Unmarshal([]byte(`{"name":"a","binding":{"cli":{"cmd":"/opt/secret"}}}`), &s); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil || strings.Contains(string(b), "binding") || strings.Contains(string(b), "secret") {
		t.Fatalf("spec encodes as %s (%v), want no binding", b, err)
	}
}
