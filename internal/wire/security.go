package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go"
)

// HeaderRequestInfo is the header nats-server stamps on every message that
// crosses a service import (accounts: the caller's account, and its user
// when the import shares it). The server replaces a header of exactly this
// name sent by the client, so its value cannot be forged; a header of any
// other spelling is the client's own and must not be read as identity.
const HeaderRequestInfo = "Nats-Request-Info"

// HeaderProbe marks a permission probe: a message on a tool's call
// subject with no reply subject and no body, which a catalogue publishes
// only to learn whether the server accepts it (docs/protocol.md §14.5). A
// worker drops it without a word; it is never a call.
const HeaderProbe = "Toolmesh-Probe"

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

// CodeForbidden is the Problem code of a refused publish or subscription:
// envelope.CodeForbidden, which wire does not import (it imports no public
// package of the module; a test holds the two equal).
const CodeForbidden = "forbidden"

// ForbiddenProblem is the Problem of a refused publish or subscription,
// made by newProblem (a Registry's New, so the Problem carries that
// registry's type base) with CodeForbidden, a detail naming op and subject,
// and both as the extensions "subject" and "operation". C and P are
// envelope.Code and *envelope.Problem.
func ForbiddenProblem[C ~string, P interface{ WithExtension(string, any) P }](newProblem func(C, string) P, op Operation, subject, what string) P {
	return newProblem(CodeForbidden,
		fmt.Sprintf("the NATS server does not permit this identity to %s %q: %s", op, subject, what)).
		WithExtension("subject", subject).WithExtension("operation", string(op))
}

// OnViolation calls handle with every permissions violation NATS reports
// on nc. NATS reports them asynchronously, through the connection's error
// handler; the handler already installed is chained, not replaced, and
// keeps receiving every error but the violations handle reports expected
// (true): refusals its owner asked for and deals with, which are no error
// of the connection's owner (nats.go's default handler would print each
// on stderr).
func OnViolation(nc *nats.Conn, handle func(op Operation, subject string) (expected bool)) {
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, s *nats.Subscription, err error) {
		if op, subject, ok := Violation(err); ok && handle(op, subject) {
			return
		}
		if prev != nil {
			prev(c, s, err)
		}
	})
}
