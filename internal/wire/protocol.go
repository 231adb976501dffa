package wire

import (
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ProbeToken is the last subject token of a caller's liveness probe:
// <inbox>.<caller-id>.alive. A worker whose lease on a caller runs out
// publishes there (a heartbeat frame naming itself and no call, reply
// subject <prefix>.ctl.<worker-id>.<caller-id>) before cancelling the caller's
// calls: a live caller answers with a liveness control message — it may
// not have been able to before, since it learns a worker's id only from
// that worker's messages, which a flood can keep queued behind thousands
// of others — and when the caller is gone the server answers the reply
// subject "503 no responders" at once. Call ids are ULIDs, upper case, so
// the token never names a call.
const ProbeToken = "alive"

// ChunkOverhead is what a chunk message keeps free of the server's
// max_payload for its headers and subject.
const ChunkOverhead = 1024

// Call modes.
const (
	ModeUnary  = "unary"
	ModeStream = "stream"
)

// Discovery is the ADR-32 service discovery subject that stock NATS
// tooling (nats micro) uses: $SRV.<verb>, then optionally the service
// name and a worker id (each "" to stop there). Discovery is not under
// the mesh prefix: the subjects are shared with every NATS service.
func Discovery(verb, service, id string) string {
	s := "$SRV." + verb
	if service != "" {
		s += "." + service
		if id != "" {
			s += "." + id
		}
	}
	return s
}

// CatalogEntry is one worker's answer on the catalog subject: its id and
// the public specs of the tools it hosts (bindings never leave the worker).
// T is the tools array's Go type: a reader decodes it as
// []envelope.ToolSpec, and the worker writes it as the json.RawMessage
// whose bytes Specs names.
type CatalogEntry[T any] struct {
	WorkerID string `json:"worker_id"`
	Tools    T      `json:"tools"`
	// IntervalMS is the worker's heartbeat (and beacon) interval: a
	// watcher that meets the worker in a catalogue answer, before any
	// beacon, knows from it how long a silence means the worker is gone.
	IntervalMS int64 `json:"interval_ms,omitempty"`
	// Specs is SpecsDigest of the encoded Tools.
	Specs string `json:"specs,omitempty"`
}

// Header returns the first value of key in h, matching the name
// case-insensitively: v2 reads only server-made headers (Status,
// Nats-Request-Info), whatever case another client or server gives them.
func Header(h nats.Header, key string) string {
	if v, ok := h[key]; ok && len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		// The length test first: most keys differ in length, and a miss
		// (an optional header not sent) visits every key.
		if len(k) == len(key) && len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Millis converts a millisecond metadata value to a Duration, saturating
// instead of overflowing: a budget of "9999999999999" ms is a very long
// budget, not a negative one that expires at once.
func Millis(ms int64) time.Duration {
	const maxMS = int64(math.MaxInt64 / int64(time.Millisecond))
	return time.Duration(min(ms, maxMS)) * time.Millisecond
}

// Control operations sent by a caller to a worker.
const (
	OpCancel = "cancel"
	OpCredit = "credit"
	OpAlive  = "alive"
	// OpBeat asks the worker for the caller's heartbeat now (§8.2): a
	// caller sends it, with a reply subject, before judging a silent
	// worker, which answers with the heartbeat on its calls' subjects;
	// a worker that is gone has no subscription, so the server answers the
	// reply subject 503 at once.
	OpBeat = "beat"
	// OpAnswer settles an open question of a call (§23.3).
	OpAnswer = "answer"
)

// Control is one caller → worker control message.
type Control struct {
	Op       string `json:"op"`
	CallID   string `json:"call_id,omitempty"`
	CallerID string `json:"caller_id,omitempty"`
	// N is the number of events granted by a credit.
	N int `json:"n,omitempty"`
	// QuestionID, Action and Content are an answer's (OpAnswer).
	QuestionID string          `json:"question_id,omitempty"`
	Action     string          `json:"action,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`
}

// ValidAction reports whether a is one of the three answer actions
// (§23.3), MCP's three elicitation actions: envelope.ActionAccept,
// ActionDecline and ActionCancel.
func ValidAction(a string) bool {
	return a == "accept" || a == "decline" || a == "cancel"
}

// Encode returns the control message's JSON.
func (c Control) Encode() []byte {
	b, _ := json.Marshal(c)
	return b
}

// ValidWorkerID accepts the ids workers give themselves (a ULID, or
// "<pool>.<ulid>"): dot-separated tokens of [A-Za-z0-9_-], at most 256
// characters in all, so no wildcard or empty token reaches a subject.
func ValidWorkerID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	prev := byte('.')
	for i := 0; i < len(id); i++ {
		b := id[i]
		switch {
		case b == '.':
			if prev == '.' {
				return false
			}
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '_', b == '-':
		default:
			return false
		}
		prev = b
	}
	return prev != '.'
}
