package caller

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// SearchHit is one tool that matches a search, with its score (higher is
// better; only the order means anything).
type SearchHit struct {
	Tool  CatalogTool `json:"tool"`
	Score float64     `json:"score"`
}

// Search ranks the catalogue's tools against query by the words of their
// names, titles, descriptions and argument names (a BM25 ranking, the
// name weighted most), best first; tools that share no word with the
// query are left out. It reads the catalogue as Catalog(ctx, 0) does.
func (c *Caller) Search(ctx context.Context, query string) ([]SearchHit, error) {
	cat, err := c.Catalog(ctx, 0)
	if err != nil {
		return nil, err
	}
	return SearchCatalog(cat, query), nil
}

// SearchCatalog ranks cat's tools against query as Search does, so a
// caller holding a catalogue (a gateway, an exporter) answers from it.
// MCP surface tools (a bridged server's resources, prompts and
// completions, wire.SplitMCPSurface) are not tools to find: they are
// left out.
func SearchCatalog(cat Catalog, query string) []SearchHit {
	terms := searchTerms(query)
	if len(terms) == 0 {
		return []SearchHit{}
	}
	tools := make([]CatalogTool, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		if _, _, surface := wire.SplitMCPSurface(&t.Spec); !surface {
			tools = append(tools, t)
		}
	}
	docs := make([]searchDoc, len(tools))
	for i, t := range tools {
		docs[i] = newSearchDoc(t.Spec)
	}
	st := newCorpusStats(terms, docs)
	hits := []SearchHit{}
	for i, d := range docs {
		if s := d.score(terms, st); s > 0 {
			hits = append(hits, SearchHit{Tool: tools[i], Score: s})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Tool.Spec.Name < hits[j].Tool.Spec.Name
	})
	return hits
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

// corpusStats are what BM25 needs of the whole catalogue, computed once
// per search (not once per tool, which made a search quadratic in the
// catalogue's size): each term's document frequency and each field's mean
// length.
type corpusStats struct {
	docs    int
	df      map[string]int
	meanLen [4]float64
}

func newCorpusStats(terms []string, docs []searchDoc) corpusStats {
	st := corpusStats{docs: len(docs), df: make(map[string]int, len(terms))}
	for _, d := range docs {
		for _, term := range terms {
			if d.has(term) {
				st.df[term]++
			}
		}
	}
	for f := range st.meanLen {
		st.meanLen[f] = meanLen(docs, f)
	}
	return st
}

// score is the document's BM25 score (k1 1.2, b 0.75) summed over fields
// with their weights.
func (d searchDoc) score(terms []string, st corpusStats) float64 {
	const k1, b = 1.2, 0.75
	var total float64
	for _, term := range terms {
		df := st.df[term]
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(st.docs)-float64(df)+0.5)/(float64(df)+0.5))
		for f, words := range d.fields {
			tf := 0
			for _, w := range words {
				if w == term {
					tf++
				}
			}
			if tf == 0 {
				continue
			}
			norm := float64(len(words)) / st.meanLen[f]
			total += [4]float64{weightName, weightTitle, weightArgs, weightDesc}[f] * idf * float64(tf) * (k1 + 1) / (float64(tf) + k1*(1-b+b*norm))
		}
	}
	return total
}

func (d searchDoc) has(term string) bool {
	for _, words := range d.fields {
		for _, w := range words {
			if w == term {
				return true
			}
		}
	}
	return false
}

func meanLen(docs []searchDoc, f int) float64 {
	n := 0
	for _, d := range docs {
		n += len(d.fields[f])
	}
	return max(float64(n)/float64(len(docs)), 1)
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
