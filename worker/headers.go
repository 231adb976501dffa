package worker

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// Bounds of call header values. Every header a call carries is checked
// against one of these before anything else happens: a caller cannot buy
// unbounded state, heartbeats or life on a worker with a header value.
const (
	maxIDLen        = 128  // Toolmesh-Call-Id, Toolmesh-Caller-Id: subject-safe tokens
	maxIdemKeyLen   = 256  // Toolmesh-Idempotency-Key
	maxAuthLen      = 8192 // Authorization
	maxMillisDigits = 15   // Toolmesh-Timeout, Toolmesh-Interval: ~31,000 years at most
	// MaxWindow is the largest initial credit a stream call may ask for;
	// larger values are clamped (credit only bounds the caller's own memory).
	MaxWindow = 1 << 16
)

// callHeaders are a call's validated header values.
type callHeaders struct {
	callID, callerID string
	mode             string // "" (a plain NATS request), mesh.ModeUnary or mesh.ModeStream
	budget           time.Duration
	hasBudget        bool
	window           int
	interval         time.Duration
}

// parseCallHeaders validates every toolmesh header of a call. A value that
// is present but malformed is invalid_input: silently ignoring a garbage
// Toolmesh-Timeout would run the call without the budget its caller meant.
func parseCallHeaders(h nats.Header, r envelope.Registry, defInterval, minInterval time.Duration) (callHeaders, *envelope.Problem) {
	ch := callHeaders{window: mesh.DefaultWindow, interval: defInterval}
	bad := func(name, why string) *envelope.Problem {
		return r.New(envelope.CodeInvalidInput, fmt.Sprintf("header %s: %s", name, why)).WithExtension("header", name)
	}
	var err string
	if ch.callID, err = token(mesh.Header(h, mesh.HeaderCallID)); err != "" {
		return ch, bad(mesh.HeaderCallID, err)
	}
	if ch.callerID, err = token(mesh.Header(h, mesh.HeaderCallerID)); err != "" {
		return ch, bad(mesh.HeaderCallerID, err)
	}
	switch ch.mode = mesh.Header(h, mesh.HeaderMode); ch.mode {
	case "", mesh.ModeUnary, mesh.ModeStream:
	default:
		return ch, bad(mesh.HeaderMode, fmt.Sprintf("want %q or %q, got %.32q", mesh.ModeUnary, mesh.ModeStream, ch.mode))
	}
	if v := mesh.Header(h, mesh.HeaderTimeout); v != "" {
		ms, e := millis(v)
		if e != "" {
			return ch, bad(mesh.HeaderTimeout, e)
		}
		ch.budget, ch.hasBudget = mesh.Millis(ms), true
	}
	if v := mesh.Header(h, mesh.HeaderWindow); v != "" {
		n, e := millis(v) // the same shape: a non-negative decimal integer
		if e != "" {
			return ch, bad(mesh.HeaderWindow, e)
		}
		ch.window = int(min(max(n, 2), MaxWindow))
	}
	if v := mesh.Header(h, mesh.HeaderInterval); v != "" {
		ms, e := millis(v)
		if e != "" {
			return ch, bad(mesh.HeaderInterval, e)
		}
		ch.interval = min(max(mesh.Millis(ms), minInterval), mesh.MaxHeartbeat)
	}
	if v := mesh.Header(h, mesh.HeaderIdempotencyKey); len(v) > maxIdemKeyLen {
		return ch, bad(mesh.HeaderIdempotencyKey, fmt.Sprintf("%d bytes, more than %d", len(v), maxIdemKeyLen))
	}
	if v := mesh.Header(h, mesh.HeaderAuthorization); len(v) > maxAuthLen {
		return ch, bad(mesh.HeaderAuthorization, fmt.Sprintf("%d bytes, more than %d", len(v), maxAuthLen))
	}
	return ch, nil
}

// token checks an id header: empty, or 1-128 characters of [A-Za-z0-9_-].
func token(v string) (string, string) {
	if len(v) > maxIDLen {
		return "", fmt.Sprintf("%d characters, more than %d", len(v), maxIDLen)
	}
	for i := 0; i < len(v); i++ {
		if !isTokenByte(v[i]) {
			return "", fmt.Sprintf("character %q is not allowed (use A-Z a-z 0-9 _ -)", v[i])
		}
	}
	return v, ""
}

func isTokenByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// millis parses a non-negative decimal integer of at most 15 digits.
func millis(v string) (int64, string) {
	if len(v) > maxMillisDigits {
		return 0, fmt.Sprintf("%.20q… has more than %d digits", v, maxMillisDigits)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, fmt.Sprintf("want a non-negative integer (milliseconds or events), got %.32q", v)
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("want a non-negative integer, got %.32q", v)
	}
	return n, ""
}
