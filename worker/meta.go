package worker

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
)

// Bounds of call metadata values. Every value a call carries is checked
// against one of these before anything else happens: a caller cannot buy
// unbounded state, heartbeats or life on a worker with a metadata value.
const (
	maxIDLen      = 128  // id, caller: subject-safe tokens
	maxIdemKeyLen = 256  // idem
	maxBearerLen  = 8192 // bearer
	maxTraceLen   = 1024 // traceparent, tracestate, baggage (each)
	// maxWindow is the largest initial credit a stream call may ask for;
	// larger values are clamped (credit only bounds the caller's own memory).
	maxWindow = 1 << 16
	// maxUnixMilli keeps a pickup deadline within time.Time's range.
	maxUnixMilli = 1 << 50
)

// callMeta is a call's validated metadata (protocol v2, §4.1).
type callMeta struct {
	callID, callerID string
	mode             string // "" (a plain NATS request), wire.ModeUnary or wire.ModeStream
	budget           time.Duration
	hasBudget        bool
	window           int
	interval         time.Duration
	idem, bearer     string
	trace            traceFields
	ask              bool      // ask=1: the caller answers questions
	fold             bool      // fold=1: the handler runs as for a unary call (§6)
	maybe            bool      // maybe=1: the caller accepts ran "maybe" (§8.2)
	pickup           time.Time // zero: the caller set no pickup deadline
	// spec is the digest of the spec the caller validated the call
	// against (wire.MetaSpec); "" when it names none.
	spec string
	// serverArgs: server_args=1, a bridged MCP tool's args go unchecked.
	serverArgs bool
}

// traceFields carry W3C trace context and baggage; empty when the caller
// traced nothing, so an untraced call costs no propagator work.
type traceFields struct{ parent, state, baggage string }

// metaParser validates one metadata line against a worker's bounds.
type metaParser struct {
	problems                 problembase.Registry
	defInterval, minInterval time.Duration
}

// parse validates every pair of a call's metadata line (nil: a call with
// no metadata). A value that is present but malformed is invalid_input
// naming the key: silently ignoring a garbage timeout would run the call
// without the budget its caller meant.
func (mp metaParser) parse(line []byte) (callMeta, *envelope.Problem) {
	m := callMeta{window: wire.DefaultWindow, interval: mp.defInterval}
	if line == nil {
		return m, nil
	}
	m.mode = wire.ModeUnary
	var seen uint32
	var badKey string
	err := wire.EachPair(line, func(key, v []byte) error {
		bit, err := m.set(mp, key, v)
		if err == nil && bit != 0 && seen&bit != 0 {
			err = fmt.Errorf("given twice")
		}
		seen |= bit
		if err != nil {
			badKey = string(key)
		}
		return err
	})
	if err != nil {
		if badKey == "" {
			return m, mp.problems.New(envelope.CodeInvalidInput, "malformed metadata line: "+err.Error()).WithFix(metaFix, envelope.MaybeIncorrect)
		}
		return m, mp.problems.New(envelope.CodeInvalidInput, fmt.Sprintf("metadata %s: %s", badKey, err)).
			WithExtension("meta", badKey).WithFix(metaFix, envelope.MaybeIncorrect)
	}
	return m, nil
}

// metaFix says what to do about a malformed metadata line: it is the
// calling client's doing, not the args'.
const metaFix = "Fix the calling client: the call's metadata line breaks the wire protocol (docs/protocol.md, section 4.1); or send the call as plain JSON with no metadata line."

// set reads one key into m, returning the key's bit (0 for a key this
// version does not know, which is ignored).
func (m *callMeta) set(mp metaParser, key, v []byte) (uint32, error) {
	switch string(key) {
	case wire.MetaID:
		return 1 << 0, token(&m.callID, v)
	case wire.MetaCaller:
		return 1 << 1, token(&m.callerID, v)
	case wire.MetaMode:
		return 1 << 2, m.setMode(v)
	case wire.MetaTimeout:
		ms, err := wire.Digits(v)
		m.budget, m.hasBudget = wire.Millis(ms), err == nil
		return 1 << 3, err
	case wire.MetaWindow:
		n, err := wire.Digits(v)
		m.window = int(min(max(n, 2), maxWindow))
		return 1 << 4, err
	case wire.MetaInterval:
		ms, err := wire.Digits(v)
		m.interval = min(max(wire.Millis(ms), mp.minInterval), wire.MaxHeartbeat)
		return 1 << 5, err
	case wire.MetaIdempotency:
		return 1 << 6, text(&m.idem, v, maxIdemKeyLen)
	case wire.MetaBearer:
		return 1 << 7, text(&m.bearer, v, maxBearerLen)
	case wire.MetaTraceparent:
		return 1 << 8, text(&m.trace.parent, v, maxTraceLen)
	case wire.MetaTracestate:
		return 1 << 9, text(&m.trace.state, v, maxTraceLen)
	case wire.MetaBaggage:
		return 1 << 10, text(&m.trace.baggage, v, maxTraceLen)
	case wire.MetaAsk:
		return 1 << 11, flag(&m.ask, v)
	case wire.MetaPickup:
		ms, err := wire.Digits(v)
		if err == nil {
			m.pickup = time.UnixMilli(min(ms, maxUnixMilli))
		}
		return 1 << 12, err
	case wire.MetaFold:
		return 1 << 13, flag(&m.fold, v)
	case wire.MetaMaybe:
		return 1 << 14, flag(&m.maybe, v)
	case wire.MetaSpec:
		return 1 << 15, token(&m.spec, v)
	case wire.MetaServerArgs:
		return 1 << 16, flag(&m.serverArgs, v)
	}
	return 0, nil
}

// flag reads a key whose only value is 1 (a flag that is there or not).
func flag(dst *bool, v []byte) error {
	if *dst = string(v) == "1"; !*dst {
		return fmt.Errorf("want 1, got %.32q", v)
	}
	return nil
}

func (m *callMeta) setMode(v []byte) error {
	switch string(v) {
	case wire.ModeUnary:
		m.mode = wire.ModeUnary
	case wire.ModeStream:
		m.mode = wire.ModeStream
	default:
		return fmt.Errorf("want %q or %q, got %.32q", wire.ModeUnary, wire.ModeStream, v)
	}
	return nil
}

// token reads an id: 1-128 characters of [A-Za-z0-9_-]. The string
// aliases v, the call message's own payload, which nothing ever writes
// after nats.go delivers it: ids cost no allocation.
func token(dst *string, v []byte) error {
	if len(v) <= maxIDLen && wire.ValidCallID(v) { // the rule below, a table lookup a byte
		*dst = unsafe.String(&v[0], len(v))
		return nil
	}
	if len(v) == 0 || len(v) > maxIDLen {
		return fmt.Errorf("%d characters, want 1-%d", len(v), maxIDLen)
	}
	for _, b := range v {
		if !isTokenByte(b) {
			return fmt.Errorf("character %q is not allowed (use A-Z a-z 0-9 _ -)", b)
		}
	}
	*dst = unsafe.String(&v[0], len(v))
	return nil
}

// text reads a percent-encoded value of at most limit bytes once decoded.
func text(dst *string, v []byte, limit int) error {
	if len(v) > 3*limit {
		return fmt.Errorf("more than %d bytes", limit)
	}
	s, err := wire.Unescape(v)
	if err != nil {
		return err
	}
	if len(s) > limit {
		return fmt.Errorf("%d bytes, more than %d", len(s), limit)
	}
	*dst = s
	return nil
}

func isTokenByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// Get returns a trace field by its W3C name; traceFields is a read-only
// propagation.TextMapCarrier over a call's metadata.
func (t traceFields) Get(key string) string {
	switch key {
	case wire.MetaTraceparent:
		return t.parent
	case wire.MetaTracestate:
		return t.state
	case wire.MetaBaggage:
		return t.baggage
	}
	return ""
}

// Set does nothing: a worker only reads trace context.
func (t traceFields) Set(string, string) {}

// Keys lists the fields present.
func (t traceFields) Keys() []string {
	var out []string
	for _, k := range []string{wire.MetaTraceparent, wire.MetaTracestate, wire.MetaBaggage} {
		if t.Get(k) != "" {
			out = append(out, k)
		}
	}
	return out
}
