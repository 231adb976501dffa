package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// FuzzAppendResultEvent: for every valid result the worker's unchecked
// writer and envelope's encoder write the same bytes.
func FuzzAppendResultEvent(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `[1,"x"]`, `"<&>"`, `{"id":"1","success":true}`, ` {"a" : 1} `, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 && !wire.Valid(data) {
			return
		}
		want, err := envelope.ToolEvent{Type: envelope.EventResult, Data: json.RawMessage(data)}.MarshalJSON()
		if err != nil {
			t.Fatalf("envelope refused valid data %q: %v", data, err)
		}
		if got := wire.AppendResultEvent(nil, data); string(got) != string(want) {
			t.Fatalf("data %q:\n got  %s\n want %s", data, got, want)
		}
	})
}
