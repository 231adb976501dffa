package envelope

import (
	"reflect"
	"testing"
)

// FuzzParseDeltaAgrees: the delta fast path decodes exactly what the
// general decoder does, and declines whatever it cannot decide alone.
func FuzzParseDeltaAgrees(f *testing.F) {
	for _, s := range []string{
		`{"type":"delta","data":{"i":1}}`, `{"type":"delta","data":"x"}`, `{"type":"delta","data":null}`,
		`{"type":"delta","data":[1,2,{"a":"\u00e9"}]}`, `{"type":"delta","data": 1}`, `{"type":"delta","data":1 }`,
		`{"type":"delta","data":1,"x":2}`, `{"type":"delta","data":1,"data":2}`, `{"type":"delta","data":}`,
		`{"type":"delta","data":"}`, "{\"type\":\"delta\",\"data\":\"\xc3\"}", `{"type":"delta","data":{}}}`,
		`{"type":"delta","data":1}` + " ", `{"type":"delta","data":{"a":1},"z":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, copyData := range []bool{false, true} {
			fast, ok := parseDelta(data, copyData)
			if !ok {
				continue
			}
			slow, err := parseAnyEvent(data, copyData)
			if err != nil {
				t.Fatalf("fast path decoded %q, the general decoder refuses it: %v", data, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%q: fast path %#v, general decoder %#v", data, fast, slow)
			}
		}
	})
}

// The fast path takes the form AppendJSON writes, and only it.
func TestParseDeltaTakesItsFormOnly(t *testing.T) {
	enc, err := ToolEvent{Type: EventDelta, Data: []byte(`{"i":7}`)}.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := parseDelta(enc, false); !ok || string(ev.Data) != `{"i":7}` || ev.Type != EventDelta {
		t.Fatalf("parseDelta(%s) = %+v, %v", enc, ev, ok)
	}
	for _, s := range []string{`{"type":"delta","data":1,"x":2}`, `{"type":"delta","data": 1}`, `{"type":"result","data":1}`, `{"type":"delta","data":"\xff"}`} {
		if _, ok := parseDelta([]byte(s), false); ok {
			t.Errorf("parseDelta took %q", s)
		}
	}
}
