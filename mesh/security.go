package mesh

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// isAuthError reports whether a connection error means the server refused
// the credentials (wrong, expired or revoked), which no retry can fix.
func isAuthError(err error) bool {
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
	if isAuthError(err) {
		return envelope.Problemf(envelope.CodeUnauthorized, "the NATS server at %s refused the credentials: %s", where, detail).
			WithFix("Check --user/--password, --creds, --nkey or --token (or the URL's user part) against the server's configuration.", envelope.HasPlaceholders)
	}
	return envelope.Problemf(envelope.CodeConnectionLost, "cannot reach NATS at %s: %s", where, detail).
		WithFix("Start a local mesh with `toolmesh dev` (or `go run ./cmd/toolmesh dev`), or point --server / $NATS_URL at a running one.", envelope.MaybeIncorrect)
}
