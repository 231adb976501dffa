package mcpmap

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/toolmesh/toolmesh/envelope"
)

// ResourceURI returns a resource URI a client asks for in normal form
// (RFC 3986 §6.2.2: scheme and host lower-cased, percent-encoded
// unreserved characters decoded, every other percent-encoding
// upper-cased), which is what a read is routed by and what the server is
// sent. A URI that is not absolute, holds a control character or a
// malformed percent-encoding, or has a ".." path segment — written
// plainly or percent-encoded, with "/" or "\" around it — is refused
// with an invalid_input Problem (ran "no") before any server sees it:
// a server's template such as file:///{+path} would otherwise take it,
// and a server that resolves it may read outside what it offers.
func ResourceURI(uri string) (string, error) {
	refuse := func(why string) (string, error) {
		return "", envelope.Problemf(envelope.CodeInvalidInput, "resource URI %q %s", clipURI(uri), why).WithRan(envelope.RanNo)
	}
	scheme, rest, ok := strings.Cut(uri, ":")
	if !ok || !validScheme(scheme) {
		return refuse("is not an absolute URI (want scheme:...)")
	}
	for _, c := range uri {
		if c < 0x20 || c == 0x7f {
			return refuse("holds a control character")
		}
	}
	rest, ok = normalPercent(rest)
	if !ok {
		return refuse("holds a malformed percent-encoding")
	}
	authority, path := "", rest
	if strings.HasPrefix(rest, "//") {
		end := strings.IndexAny(rest[2:], "/?#")
		if end < 0 {
			end = len(rest) - 2
		}
		authority, path = rest[2:2+end], rest[2+end:]
	}
	segments := path
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		segments = path[:i]
	}
	if hasDotDot(authority + "/" + segments) { // file://../x is ../x to a server that strips file://
		return refuse(`has a ".." path segment`)
	}
	out := strings.ToLower(scheme) + ":"
	if strings.HasPrefix(rest, "//") {
		out += "//" + lowerHost(authority)
	}
	return out + path, nil
}

// validScheme reports whether s is an RFC 3986 scheme.
func validScheme(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlpha(c) && !isDigit(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// normalPercent decodes percent-encoded unreserved characters and
// upper-cases the hex digits of the others; false on a malformed one.
func normalPercent(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		c := unhex(s[i+1])<<4 | unhex(s[i+2])
		if isAlpha(c) || isDigit(c) || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(s[i+1:i+3]))
		}
		i += 2
	}
	return b.String(), true
}

// hasDotDot reports whether a (percent-normalised) path has a ".."
// segment between "/" or "\" separators.
func hasDotDot(path string) bool {
	for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return true
		}
	}
	return false
}

// lowerHost lower-cases an authority's host, leaving its userinfo as is.
func lowerHost(authority string) string {
	i := strings.LastIndexByte(authority, '@')
	return authority[:i+1] + strings.ToLower(authority[i+1:])
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// clipURI bounds a URI quoted in a Problem.
func clipURI(uri string) string {
	if len(uri) <= 200 {
		return uri
	}
	return uri[:200] + "…"
}

// Resources is what one MCP server offers to read: the URIs it listed
// and its resource templates. A read goes to a server only when it owns
// the URI (Owns), so a catch-all template is asked only for URIs it
// matches and nothing it never offered reaches it.
type Resources struct {
	listed    map[string]string // normal form → as the server listed it
	templates []*uritemplate.Template
}

// NewResources indexes a server's listings; templates that do not parse
// match nothing.
func NewResources(listed []*mcp.Resource, templates []*mcp.ResourceTemplate) *Resources {
	r := &Resources{listed: map[string]string{}}
	for _, res := range listed {
		if res == nil {
			continue
		}
		if n, err := ResourceURI(res.URI); err == nil {
			r.listed[n] = res.URI
		}
	}
	for _, t := range templates {
		if t == nil {
			continue
		}
		if tmpl, err := uritemplate.New(t.URITemplate); err == nil {
			r.templates = append(r.templates, tmpl)
		}
	}
	return r
}

// Owns returns the URI to send the server for a read of asked, whose
// normal form (ResourceURI) is normal: the URI as the server listed it,
// or the form one of its templates matches (the normal one first, then
// asked as written: a template may spell its host in capitals); false
// when it offers neither.
func (r *Resources) Owns(asked, normal string) (string, bool) {
	if r == nil {
		return "", false
	}
	if uri, ok := r.listed[normal]; ok {
		return uri, true
	}
	for _, uri := range []string{normal, asked} {
		for _, t := range r.templates {
			if t.Regexp().MatchString(uri) {
				return uri, true
			}
		}
	}
	return "", false
}
