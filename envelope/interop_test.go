package envelope

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// Events from other implementations of the ToolEvent seed decode, and
// decoding then encoding gives back the same JSON members.
func TestSeedEventsRoundTrip(t *testing.T) {
	cases := []struct{ name, in string }{
		{"u64 call id", `{"type":"start","tool_id":"web_search","call_id":42}`},
		{"max u64 call id", `{"type":"start","tool_id":"web_search","call_id":18446744073709551615}`},
		{"string call id", `{"type":"start","tool_id":"fs.read","call_id":"01J0000000000000000000000"}`},
		{"null options", `{"type":"start","tool_id":"t","call_id":null,"metadata":null}`},
		{"metadata not object", `{"type":"start","tool_id":"t","metadata":["a",1]}`},
		{"metadata empty", `{"type":"start","tool_id":"t","metadata":{}}`},
		{"metadata big number", `{"type":"start","tool_id":"t","metadata":{"n":12345678901234567890,"f":0.1}}`},
		{"progress f32", `{"type":"progress","pct":33.3,"message":"indexing"}`},
		{"progress nulls", `{"type":"progress","pct":null,"message":null}`},
		{"progress empty message", `{"type":"progress","message":""}`},
		{"delta", `{"type":"delta","data":{"token":"x"}}`},
		{"result null", `{"type":"result","data":null}`},
		{"error foreign details", `{"type":"error","code":"upstream_timeout","message":"slow","details":{"upstream":"anthropic"}}`},
		{"error details array", `{"type":"error","code":"x","message":"m","details":[1,2]}`},
		{"error details string", `{"type":"error","code":"x","message":"m","details":"text"}`},
		{"error details null", `{"type":"error","code":"x","message":"m","details":null}`},
		{"error problem-like details", `{"type":"error","code":"x","message":"m","details":{"status":"x"}}`},
		{"unknown member", `{"type":"delta","data":1,"extra":{"k":true}}`},
		{"member of another type", `{"type":"result","data":1,"tool_id":"t"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ev ToolEvent
			if err := json.Unmarshal([]byte(tc.in), &ev); err != nil {
				t.Fatalf("decode: %v", err)
			}
			out, err := json.Marshal(ev)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !wire.Same([]byte(tc.in), out) {
				t.Fatalf("round trip changed the members:\n in  %s\n out %s", tc.in, out)
			}
		})
	}
}

// A toolmesh Problem in details stays a typed Problem; a foreign details
// value is carried verbatim and still reaches the Problem the caller sees.
func TestErrorDetailsKinds(t *testing.T) {
	own, _ := json.Marshal(ErrorEvent(NewProblem(CodeOverloaded, "busy")))
	ev, err := ParseEvent(own)
	if err != nil || ev.details == nil || ev.details.Code != CodeOverloaded || ev.detailsRaw != nil {
		t.Fatalf("own problem: %+v %v", ev, err)
	}
	ev, err = ParseEvent([]byte(`{"type":"error","code":"upstream_timeout","message":"slow","details":{"upstream":"anthropic"}}`))
	if err != nil || ev.details != nil || string(ev.detailsRaw) != `{"upstream":"anthropic"}` {
		t.Fatalf("foreign details: %+v %v", ev, err)
	}
	p := ev.Problem()
	if p.Code != "upstream_timeout" || string(p.Extensions["details"].(json.RawMessage)) != `{"upstream":"anthropic"}` {
		t.Fatalf("problem of foreign details: %+v", p)
	}
}

// A call id that is neither a string nor a u64 is refused, naming the field.
func TestCallIDNumberRejects(t *testing.T) {
	for _, in := range []string{`-1`, `1.5`, `18446744073709551616`, `true`, `{}`} {
		_, err := ParseEvent([]byte(`{"type":"start","tool_id":"t","call_id":` + in + `}`))
		if err == nil || !strings.Contains(err.Error(), "call_id") {
			t.Errorf("call_id %s: err = %v", in, err)
		}
	}
}

// A member name with a control character must be escaped as JSON, not Go.
func TestErrorResponseWithDataEscapesNames(t *testing.T) {
	r, err := errorResponseWithData("1", CodeToolFailed, "m", json.RawMessage("{\"a\\u0001b\":1,\"\\u00e9\\u2028\":2}"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil || !json.Valid(b) || !json.Valid(r.Data) {
		t.Fatalf("invalid JSON: %s %v", r.Data, err)
	}
	if v, ok := r.Get("a\x01b"); !ok || string(v) != "1" {
		t.Fatalf("member lost: %s", r.Data)
	}
}

// Invalid UTF-8 is not JSON text: decoders refuse it, encoders never emit it.
func TestInvalidUTF8Refused(t *testing.T) {
	if _, err := (ToolEvent{Type: EventResult, Data: json.RawMessage("\"\xfe\"")}).MarshalJSON(); err == nil {
		t.Fatal("result with invalid UTF-8 encoded")
	}
	if _, err := ParseEvent([]byte("{\"type\":\"delta\",\"data\":\"\xc3\"}")); err == nil {
		t.Fatal("event with invalid UTF-8 decoded")
	}
}

// FuzzToolEventLossless: any event that decodes re-encodes to valid UTF-8
// JSON with the same members, except the members the shared wire format itself requires
// that toolmesh's decoder tolerates missing (an error's message).
func FuzzToolEventLossless(f *testing.F) {
	seedCorpus(f)
	for _, s := range []string{`{"type":"start","tool_id":"web_search","call_id":42}`,
		`{"type":"error","code":"x","message":"m","details":{"upstream":"a"}}`,
		`{"type":"progress","pct":1e1,"message":"","z":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := ParseEvent(data)
		if err != nil {
			return
		}
		out, err := ev.MarshalJSON()
		if err != nil {
			t.Fatalf("decoded %q but cannot encode: %v", data, err)
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("encoded invalid JSON %q from %q", out, data)
		}
		if ev.Type == EventError && !hasStringMember(data, "message") {
			return
		}
		if !wire.Same(data, out) {
			t.Fatalf("round trip changed members:\n in  %s\n out %s", data, out)
		}
	})
}

func hasStringMember(data []byte, name string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(data, &m) == nil && len(m[name]) > 0 && m[name][0] == '"'
}
