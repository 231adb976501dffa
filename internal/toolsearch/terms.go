package toolsearch

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/toolmesh/toolmesh/envelope"
)

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
