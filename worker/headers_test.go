package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

func TestParseCallHeaders(t *testing.T) {
	for _, c := range []struct {
		name, key, value string
		bad              bool
		check            func(callHeaders) bool
	}{
		{"interval 0 is floored", mesh.HeaderInterval, "0", false, func(h callHeaders) bool { return h.interval == mesh.MinHeartbeat }},
		{"interval 1ms is floored", mesh.HeaderInterval, "1", false, func(h callHeaders) bool { return h.interval == mesh.MinHeartbeat }},
		{"interval capped", mesh.HeaderInterval, "999999999999", false, func(h callHeaders) bool { return h.interval == mesh.MaxHeartbeat }},
		{"window clamped up", mesh.HeaderWindow, "0", false, func(h callHeaders) bool { return h.window == 2 }},
		{"window clamped down", mesh.HeaderWindow, "999999999999999", false, func(h callHeaders) bool { return h.window == MaxWindow }},
		{"budget 0 kept (spent)", mesh.HeaderTimeout, "0", false, func(h callHeaders) bool { return h.hasBudget && h.budget == 0 }},
		{"budget", mesh.HeaderTimeout, "1500", false, func(h callHeaders) bool { return h.budget == 1500*time.Millisecond }},
		{"mode stream", mesh.HeaderMode, "stream", false, func(h callHeaders) bool { return h.mode == mesh.ModeStream }},
		{"garbage budget", mesh.HeaderTimeout, "soon", true, nil},
		{"negative budget", mesh.HeaderTimeout, "-1", true, nil},
		{"budget with spaces", mesh.HeaderTimeout, " 10", true, nil},
		{"too many digits", mesh.HeaderTimeout, "1234567890123456", true, nil},
		{"unknown mode", mesh.HeaderMode, "UNARY", true, nil},
		{"window garbage", mesh.HeaderWindow, "4x", true, nil},
		{"interval fraction", mesh.HeaderInterval, "0.5", true, nil},
		{"call id wildcard", mesh.HeaderCallID, "a.*", true, nil},
		{"caller id too long", mesh.HeaderCallerID, string(make([]byte, 129)), true, nil},
		{"idempotency key too long", mesh.HeaderIdempotencyKey, string(make([]byte, 257)), true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := nats.Header{c.key: []string{c.value}}
			got, p := parseCallHeaders(h, envelope.Registry{}, time.Second, mesh.MinHeartbeat)
			if c.bad {
				if p == nil || p.Code != envelope.CodeInvalidInput || p.Extensions["header"] != c.key {
					t.Fatalf("got %+v, want invalid_input naming %s", p, c.key)
				}
				return
			}
			if p != nil || !c.check(got) {
				t.Fatalf("got %+v %v", got, p)
			}
		})
	}
}

// Whatever the header values, parsing never panics, and what it accepts
// is within bounds.
func FuzzCallHeaders(f *testing.F) {
	f.Add("01J", "caller", "stream", "1000", "64", "0")
	f.Add("", "", "", "", "", "")
	f.Add("x.y", "-", "unary", "-1", "99999999999999999999", "1e3")
	f.Fuzz(func(t *testing.T, callID, callerID, mode, timeout, window, interval string) {
		h := nats.Header{}
		for k, v := range map[string]string{mesh.HeaderCallID: callID, mesh.HeaderCallerID: callerID, mesh.HeaderMode: mode,
			mesh.HeaderTimeout: timeout, mesh.HeaderWindow: window, mesh.HeaderInterval: interval} {
			if v != "" {
				h.Set(k, v)
			}
		}
		got, p := parseCallHeaders(h, envelope.Registry{}, time.Second, mesh.MinHeartbeat)
		if p != nil {
			if p.Code != envelope.CodeInvalidInput {
				t.Fatalf("problem %+v", p)
			}
			return
		}
		if got.window < 2 || got.window > MaxWindow || got.interval < mesh.MinHeartbeat || got.interval > mesh.MaxHeartbeat || got.budget < 0 || len(got.callID) > maxIDLen {
			t.Fatalf("out of bounds: %+v", got)
		}
	})
}
