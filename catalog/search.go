package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/toolmesh/toolmesh/envelope"
)

// SearchHit is one tool that matches a search, with its score (higher is
// better; only the order means anything).
type SearchHit struct {
	Tool  Tool    `json:"tool"`
	Score float64 `json:"score"`
}

// Search ranks the listing's tools against query by the words of their
// names, titles, descriptions and argument names (a BM25 ranking, the
// name weighted most), best first; tools that share no word with the
// query are left out, and so are MCP surface tools (a bridged server's
// resources, prompts and completions, which are not tools to find). It
// reads the catalogue as Describe does, and keeps its index while the listing's
// tools read the same (a new revision builds a new one), so repeated
// searches cost the query's postings, not the catalogue's size. A reader
// holding a listing of its own ranks it with a SearchCache.
func (c *Catalog) Search(ctx context.Context, query string) ([]SearchHit, error) {
	l, err := c.listing(ctx, innerRegistryWait, innerGatherWait)
	if err != nil {
		return nil, err
	}
	return c.search.Search(l, query), nil
}

// Field weights: a word of the tool's own name says most about it.
const (
	weightName  = 4.0
	weightTitle = 2.0
	weightArgs  = 1.0
	weightDesc  = 1.0
)

// searchDoc is one tool's words, by field.
type searchDoc struct {
	fields [4][]string // name (last segment first), title, argument names, description
}

func newSearchDoc(s envelope.ToolSpec) searchDoc {
	var args []string
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(s.InputSchema, &schema) == nil {
		for name := range schema.Properties {
			args = append(args, searchTerms(name)...)
		}
	}
	return searchDoc{fields: [4][]string{searchTerms(s.Name), searchTerms(s.Title), args, searchTerms(s.Description)}}
}

// stopword reports words too common in queries and descriptions to tell
// tools apart.
func stopword(w string) bool {
	switch w {
	case "a", "an", "the", "of", "to", "in", "on", "and", "or", "for", "with", "from", "by", "is", "it", "its", "this", "that":
		return true
	}
	return false
}

// searchTerms splits text into lower-case words at anything not a letter
// or digit (dots, underscores, dashes and camelCase humps included),
// drops stop words, and folds a plural "s".
func searchTerms(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := strings.ToLower(string(cur))
		cur = cur[:0]
		if stopword(w) {
			return
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	var prev rune
	for _, r := range text {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}
