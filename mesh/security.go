package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// MinHeartbeat floors every heartbeat interval, on both sides: a caller
// asking for beats every millisecond would otherwise buy a stream of
// messages per call for free. Callers never expect faster beats than this,
// so a worker flooring to it is never judged lost.
const MinHeartbeat = 100 * time.Millisecond

// MaxHeartbeat caps every heartbeat interval, on both sides. A worker
// checks its caller's liveness once per beat, so a huge interval would be a
// call that outlives its caller by as much; and under accounts (see
// deploy/secure) a beat is what keeps the server's reply mapping of a
// silent call alive, so the interval must stay well below the export's
// response_threshold (2 minutes by default).
const MaxHeartbeat = time.Minute

// HeaderRequestInfo is the header nats-server stamps on every message that
// crosses a service import (accounts: the caller's account, and its user
// when the import shares it). The server replaces a header of exactly this
// name sent by the client, so its value cannot be forged; a header of any
// other spelling is the client's own and must not be read as identity.
const HeaderRequestInfo = "Nats-Request-Info"

// Identity returns who sent a message as the NATS server vouches for it:
// "account/user" from the server-stamped Nats-Request-Info header, or ""
// when the message did not cross a service import (a single-account mesh,
// such as `toolmesh dev`, where every client is equally trusted). The name
// is matched exactly and the last value wins: the server appends its own.
func Identity(h nats.Header) string {
	v := h[HeaderRequestInfo]
	if len(v) == 0 {
		return ""
	}
	var ci struct {
		Account string `json:"acc"`
		User    string `json:"user"`
	}
	if err := json.Unmarshal([]byte(v[len(v)-1]), &ci); err != nil || ci.Account == "" {
		return "?" // present but unreadable: an identity nothing else matches
	}
	return ci.Account + "/" + ci.User
}

// Operation is what a permissions violation refused.
type Operation string

// The operations NATS permissions govern.
const (
	OpPublish   Operation = "publish"
	OpSubscribe Operation = "subscribe"
)

var violationRe = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "([^"]*)"`)

// Violation reports whether err is a NATS permissions violation and, if
// so, which operation on which subject the server refused. NATS reports
// them asynchronously (the connection's error handler), naming the subject.
func Violation(err error) (Operation, string, bool) {
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return "", "", false
	}
	m := violationRe.FindStringSubmatch(err.Error())
	if m == nil {
		return "", "", false
	}
	if strings.EqualFold(m[1], "publish") {
		return OpPublish, m[2], true
	}
	return OpSubscribe, m[2], true
}

// ForbiddenProblem is the Problem of a refused publish or subscription.
func ForbiddenProblem(r envelope.Registry, op Operation, subject, what string) *envelope.Problem {
	return r.New(envelope.CodeForbidden,
		fmt.Sprintf("the NATS server does not permit this identity to %s %q: %s", op, subject, what)).
		WithExtension("subject", subject).WithExtension("operation", string(op))
}

// IsAuthError reports whether a connection error means the server refused
// the credentials (wrong, expired or revoked), which no retry can fix.
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired} {
		if errors.Is(err, e) {
			return true
		}
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "authorization violation") || strings.Contains(s, "authentication")
}

// RedactURL hides credentials in a comma-separated list of server URLs:
// a password becomes "xxxxx", and a user part without a password (a
// token, as in nats://TOKEN@host) is hidden whole.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = redactOne(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

// redactOne works on the string, not a parsed URL: a password holding
// '#', '/' or '?' unescaped would move into a URL's fragment or path and
// survive a parser-based redaction. Everything up to the last '@' is the
// user part; of it only the user name before the first ':' is kept.
func redactOne(raw string) string {
	scheme, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		user = "xxxxx" // a user part without a password is a token
	} else {
		user += ":xxxxx"
	}
	return scheme + user + rest[at:]
}

// DialProblem turns a failure to connect into the Problem a command
// reports: unauthorized (not transient) when the server refused the
// credentials, connection_lost otherwise. The URL is shown without secrets.
func DialProblem(urls string, err error) *envelope.Problem {
	where := RedactURL(urls)
	detail := strings.ReplaceAll(err.Error(), urls, where)
	if IsAuthError(err) {
		return envelope.Problemf(envelope.CodeUnauthorized, "the NATS server at %s refused the credentials: %s", where, detail).
			WithFix("Check --user/--password, --creds, --nkey or --token (or the URL's user part) against the server's configuration.", envelope.HasPlaceholders)
	}
	return envelope.Problemf(envelope.CodeConnectionLost, "cannot reach NATS at %s: %s", where, detail).
		WithFix("Start a local mesh with `toolmesh dev` (or `go run ./cmd/toolmesh dev`), or point --server / $NATS_URL at a running one.", envelope.MaybeIncorrect)
}

// OnViolation calls handle with every permissions violation NATS reports
// on nc. NATS reports them asynchronously, through the connection's error
// handler; the handler already installed is chained, not replaced, and
// keeps receiving every error.
func OnViolation(nc *nats.Conn, handle func(op Operation, subject string)) {
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, s *nats.Subscription, err error) {
		if op, subject, ok := Violation(err); ok {
			handle(op, subject)
		}
		if prev != nil {
			prev(c, s, err)
		}
	})
}
