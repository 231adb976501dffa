package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
)

func testParser() metaParser {
	return metaParser{problems: problembase.Registry{}, defInterval: time.Second, minInterval: wire.MinHeartbeat}
}

func TestParseCallMeta(t *testing.T) {
	for _, c := range []struct {
		name, key, value string
		bad              bool
		check            func(callMeta) bool
	}{
		{"interval 0 is floored", wire.MetaInterval, "0", false, func(m callMeta) bool { return m.interval == wire.MinHeartbeat }},
		{"interval 1ms is floored", wire.MetaInterval, "1", false, func(m callMeta) bool { return m.interval == wire.MinHeartbeat }},
		{"interval capped", wire.MetaInterval, "999999999999", false, func(m callMeta) bool { return m.interval == wire.MaxHeartbeat }},
		{"window clamped up", wire.MetaWindow, "0", false, func(m callMeta) bool { return m.window == 2 }},
		{"window clamped down", wire.MetaWindow, "999999999999999", false, func(m callMeta) bool { return m.window == maxWindow }},
		{"budget 0 kept (spent)", wire.MetaTimeout, "0", false, func(m callMeta) bool { return m.hasBudget && m.budget == 0 }},
		{"budget", wire.MetaTimeout, "1500", false, func(m callMeta) bool { return m.budget == 1500*time.Millisecond }},
		{"mode stream", wire.MetaMode, "stream", false, func(m callMeta) bool { return m.mode == wire.ModeStream }},
		{"bearer percent-decoded", wire.MetaBearer, "a%20b%25", false, func(m callMeta) bool { return m.bearer == "a b%" }},
		{"unknown key ignored", "future", "x", false, func(m callMeta) bool { return m.mode == wire.ModeUnary }},
		{"ask", wire.MetaAsk, "1", false, func(m callMeta) bool { return m.ask }},
		{"ask other than 1", wire.MetaAsk, "yes", true, nil},
		{"garbage budget", wire.MetaTimeout, "soon", true, nil},
		{"negative budget", wire.MetaTimeout, "-1", true, nil},
		{"empty budget", wire.MetaTimeout, "", true, nil},
		{"too many digits", wire.MetaTimeout, "1234567890123456", true, nil},
		{"unknown mode", wire.MetaMode, "UNARY", true, nil},
		{"window garbage", wire.MetaWindow, "4x", true, nil},
		{"interval fraction", wire.MetaInterval, "0.5", true, nil},
		{"call id wildcard", wire.MetaID, "a.*", true, nil},
		{"caller id too long", wire.MetaCaller, strings.Repeat("c", 129), true, nil},
		{"idempotency key too long", wire.MetaIdempotency, strings.Repeat("k", 257), true, nil},
		{"bad percent-encoding", wire.MetaBearer, "abc%4", true, nil},
		{"spec digest", wire.MetaSpec, strings.Repeat("ab", 32), false, func(m callMeta) bool { return m.spec == strings.Repeat("ab", 32) }},
		{"spec digest empty", wire.MetaSpec, "", true, nil},
		{"spec digest not a token", wire.MetaSpec, "a%20b", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := " " + c.key + "=" + c.value
			got, p := testParser().parse([]byte(line))
			if c.bad {
				if p == nil || p.Code != envelope.CodeInvalidInput || p.Extensions["meta"] != c.key {
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

func TestParseCallMetaRefusesRepeatsAndBarePairs(t *testing.T) {
	for _, line := range []string{" id=a id=b", " id", " =x", " mode=stream mode=unary"} {
		if _, p := testParser().parse([]byte(line)); p == nil || p.Code != envelope.CodeInvalidInput {
			t.Errorf("%q: got %v, want invalid_input", line, p)
		}
	}
}

// Whatever the line, parsing never panics, and what it accepts is within bounds.
func FuzzCallMeta(f *testing.F) {
	f.Add(" id=01J caller=c mode=stream timeout=1000 window=64 interval=0")
	f.Add("")
	f.Add(" id=x.y caller=- mode=unary timeout=-1 window=99999999999999999999 interval=1e3")
	f.Add(" bearer=%zz idem=%41 traceparent=00-abc")
	f.Fuzz(func(t *testing.T, line string) {
		got, p := testParser().parse([]byte(line))
		if p != nil {
			if p.Code != envelope.CodeInvalidInput {
				t.Fatalf("problem %+v", p)
			}
			return
		}
		if got.window < 2 || got.window > maxWindow || got.interval < wire.MinHeartbeat && got.interval != time.Second ||
			got.interval > wire.MaxHeartbeat || got.budget < 0 || len(got.callID) > maxIDLen || len(got.bearer) > maxBearerLen {
			t.Fatalf("out of bounds: %+v", got)
		}
	})
}
