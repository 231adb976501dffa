package problems

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/problembase"
)

// Every registry code has a page whose facts match the registry and whose
// permalink is the path of the code's default type URI, so the URI
// dereferences to the page once docs/ is published.
func TestEveryCodeHasAPage(t *testing.T) {
	for _, code := range codes.All() {
		t.Run(string(code), func(t *testing.T) {
			info, _ := codes.Lookup(code)
			page, ok := Page(info.Slug)
			if !ok {
				t.Fatalf("no docs/problems/%s.md", info.Slug)
			}
			typeURI := problembase.Registry{}.TypeURI(envelope.Code(code))
			u, err := url.Parse(typeURI)
			if err != nil {
				t.Fatal(err)
			}
			if got := Permalink(info.Slug); got != u.Path+"/" {
				t.Errorf("permalink %q, want %q (the path of %s)", got, u.Path+"/", typeURI)
			}
			transient := "| Transient | no (`retry_after` is `null`) |"
			if info.Transient {
				transient = fmt.Sprintf("| Transient | yes (default `retry_after` %g s) |", info.RetryAfter)
			}
			for _, want := range []string{
				fmt.Sprintf("# `%s`: %s\n", code, info.Title),
				fmt.Sprintf("| Type URI | `%s` |", typeURI),
				fmt.Sprintf("| Status | %d |", info.Status),
				fmt.Sprintf("| Exit code of `toolmesh` | %d |", info.ExitCode),
				transient,
				"## What it means\n", "## What an agent should do\n", "## What a human should do\n",
			} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if strings.HasPrefix(page, "---") {
				t.Error("Page kept the front matter")
			}
		})
	}
}

func TestPageRefusesPaths(t *testing.T) {
	for _, slug := range []string{"", "../README", "timeout/v1", "no-such-code", "problems.go"} {
		if _, ok := Page(slug); ok {
			t.Errorf("Page(%q) found a page", slug)
		}
	}
}
