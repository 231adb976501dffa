package redact

import "strings"

// URLCredentials hides the credentials of every URL in s: in
// scheme://user:password@host the password becomes Mark, and a user part
// without a password (a token, as in nats://TOKEN@host) becomes Mark
// whole. It works on the text, not on parsed URLs: a password holding an
// unescaped '/', '#' or '?' would move into a parsed URL's path and
// survive, so the user part runs to the last '@' before the URL's end
// (white space or a quote); host:port/path@x thus loses its port and path,
// a cost taken so that no password of digits and '/' is ever shown. Text
// without "://" is returned as it is.
func URLCredentials(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		start := i + 3
		if !hasScheme(rest[:i]) {
			b.WriteString(rest[:start])
			rest = rest[start:]
			continue
		}
		end := start + urlEnd(rest[start:])
		b.WriteString(rest[:start])
		b.WriteString(hideUserinfo(rest[start:end]))
		rest = rest[end:]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(rest)
	return b.String()
}

// hasScheme reports whether before ends in a URL scheme
// (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), RFC 3986 §3.1).
func hasScheme(before string) bool {
	j := len(before)
	for j > 0 && schemeByte(before[j-1]) {
		j--
	}
	for j < len(before) && !isAlpha(before[j]) {
		j++ // a scheme starts with a letter
	}
	return j < len(before)
}

func schemeByte(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// urlEnd is where the URL that starts a ends: at white space, a quote,
// an angle bracket or a backtick.
func urlEnd(a string) int {
	if i := strings.IndexAny(a, " \t\r\n\"'`<>"); i >= 0 {
		return i
	}
	return len(a)
}

// hideUserinfo hides the user part of one URL without its scheme.
func hideUserinfo(u string) string {
	at := strings.LastIndexByte(u, '@')
	if at <= 0 {
		return u
	}
	info := u[:at]
	user, password, hasPassword := strings.Cut(info, ":")
	switch {
	case strings.HasPrefix(info, Mark) || password == Mark || strings.HasPrefix(password, Mark):
		return u // already hidden
	case !hasPassword && strings.Contains(info, "/"):
		return u // an '@' in the path: no user part
	case !hasPassword:
		return Mark + u[at:]
	}
	return user + ":" + Mark + u[at:]
}
