package mcpmap

import (
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
)

// ResourceURI normalises what it lets through and refuses, as
// invalid_input that never ran, every ".." segment however it is written.
func TestResourceURI(t *testing.T) {
	ok := map[string]string{
		"file:///notes/a.txt":          "file:///notes/a.txt",
		"FILE:///notes/%61.txt":        "file:///notes/a.txt",
		"test://Template/7/data":       "test://template/7/data",
		"https://u:P@Example.com/x%2f": "https://u:P@example.com/x%2F",
		"file:///a/./b":                "file:///a/./b",
		"file:///a..b/c":               "file:///a..b/c",
		"file:///x?q=../../etc":        "file:///x?q=../../etc",
		"urn:isbn:0451450523":          "urn:isbn:0451450523",
	}
	for in, want := range ok {
		got, err := ResourceURI(in)
		if err != nil || got != want {
			t.Errorf("ResourceURI(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"file:///notes/../etc/passwd", "file:///%2e%2e/etc/passwd", "file:///notes/%2E%2e/x",
		"file:///notes/.%2e", "file:///a\\..\\b", "test:../x", "test://h/..", "file://../x/y",
		"no-scheme", "/abs/path", ":x", "file:///a%zz", "file:///a%2", "file:///a\nb",
	} {
		_, err := ResourceURI(in)
		var p *envelope.Problem
		if !errors.As(err, &p) || p.Code != envelope.CodeInvalidInput || p.Ran() != envelope.RanNo {
			t.Errorf("ResourceURI(%q): %v; want invalid_input, ran no", in, err)
		}
	}
}

// A server owns what it listed (in any spelling with the same normal
// form) and what its templates match, and nothing else.
func TestResourcesOwns(t *testing.T) {
	r := NewResources([]*mcp.Resource{{URI: "test://static/%7Ea"}},
		[]*mcp.ResourceTemplate{{URITemplate: "test://template/{id}/data"}, {URITemplate: "{bad"}, {URITemplate: "test://Upper/{n}"}})
	cases := []struct{ in, send string }{
		{"test://static/~a", "test://static/%7Ea"},
		{"test://template/7/data", "test://template/7/data"},
		{"test://template/7/other", ""},
		{"file:///etc/passwd", ""},
		{"test://Upper/9", "test://Upper/9"},
	}
	for _, c := range cases {
		n, err := ResourceURI(c.in)
		if err != nil {
			t.Fatal(err)
		}
		send, ok := r.Owns(c.in, n)
		if send != c.send || ok != (c.send != "") {
			t.Errorf("Owns(%q) = %q, %v; want %q", c.in, send, ok, c.send)
		}
	}
	var none *Resources
	if _, ok := none.Owns("test://static/~a", "test://static/~a"); ok {
		t.Error("a nil Resources owns a URI")
	}
}
