package redact

import "strings"

// ServerURLs hides credentials in a comma-separated list of NATS server
// URLs, the way a command shows the server it dials (mesh.DialProblem,
// toolmesh top, the bench): a password becomes "xxxxx", and a user part
// without a password (a token, as in nats://TOKEN@host) is hidden whole.
// Unlike URLCredentials it takes the list alone, not text around it.
func ServerURLs(urls string) string {
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
