package mesh

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/redact"
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

// DialProblem turns a failure to connect into the Problem a command
// reports: unauthorized (not transient) when the server refused the
// credentials, connection_lost otherwise. The URL is shown without secrets:
// a password becomes "xxxxx", and a user part without a password (a
// token, as in nats://TOKEN@host) is hidden whole.
func DialProblem(urls string, err error) *envelope.Problem {
	where := redact.ServerURLs(urls)
	detail := strings.ReplaceAll(err.Error(), urls, where)
	if isAuthError(err) {
		return envelope.Problemf(envelope.CodeUnauthorized, "the NATS server at %s refused the credentials: %s", where, detail).
			WithFix("Check --user/--password, --creds, --nkey or --token (or the URL's user part) against the server's configuration.", envelope.HasPlaceholders)
	}
	return envelope.Problemf(envelope.CodeConnectionLost, "cannot reach NATS at %s: %s", where, detail).
		WithFix("Start a local mesh with `toolmesh dev` (or `go run ./cmd/toolmesh dev`), or point --server / $NATS_URL at a running one.", envelope.MaybeIncorrect)
}
