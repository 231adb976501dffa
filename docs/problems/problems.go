package problems

import (
	"embed"
	"strings"
)

//go:embed *.md
var pages embed.FS

// Page returns the Markdown page of a problem slug (invalid-input), without
// its front matter; ok is false when no page exists.
func Page(slug string) (page string, ok bool) {
	if slug == "" || strings.ContainsAny(slug, "/\\.") {
		return "", false
	}
	b, err := pages.ReadFile(slug + ".md")
	if err != nil {
		return "", false
	}
	return stripFrontMatter(string(b)), true
}

// Permalink returns the permalink a page's front matter declares.
func Permalink(slug string) string {
	b, err := pages.ReadFile(slug + ".md")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(frontMatter(string(b)), "\n") {
		if v, ok := strings.CutPrefix(line, "permalink:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func frontMatter(s string) string {
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return ""
	}
	fm, _, _ := strings.Cut(rest, "\n---\n")
	return fm
}

func stripFrontMatter(s string) string {
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return s
	}
	if _, body, found := strings.Cut(rest, "\n---\n"); found {
		return strings.TrimLeft(body, "\n")
	}
	return s
}
