package toolsearch

import (
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Hit is one tool that matches a search, with its score (higher is
// better; only the order means anything). For a catalog.Tool it has the
// shape (and JSON) of catalog.SearchHit.
type Hit[T any] struct {
	Tool  T       `json:"tool"`
	Score float64 `json:"score"`
}

// surfaceTool reports whether s is an MCP surface tool (a bridged
// server's resources, prompts and completions), which is not a tool to
// find.
func surfaceTool(s *envelope.ToolSpec) bool {
	_, _, surface := wire.SplitMCPSurface(s.Name, s.Tags)
	return surface
}

// Index is a catalogue's tools indexed for a BM25 ranking: each word's
// postings (the tools holding it, with its count in each field) and each
// field's mean length, so a query costs the postings of its words rather
// than a pass over every tool. Build it once per catalogue with New; it
// is read-only afterwards and safe for concurrent use.
type Index[T any] struct {
	tools    []T                         // the catalogue's tools, shared with it
	spec     func(*T) *envelope.ToolSpec // a tool's spec
	docs     []int32                     // the searchable ones (not MCP surface tools): their places in tools
	lens     [][4]int32                  // each searchable tool's field lengths in words
	postings map[string][]posting
	meanLen  [4]float64
}

// posting is one tool holding a word: its index in docs and the word's
// count in each field.
type posting struct {
	doc int32
	tf  [4]int32
}

// New indexes tools, whose specs spec gives (MCP surface tools left out,
// as catalog.Catalog.Search says). The index shares tools: leave them
// unchanged while it is in use.
func New[T any](tools []T, spec func(*T) *envelope.ToolSpec) *Index[T] {
	ix := &Index[T]{tools: tools, spec: spec, postings: map[string][]posting{}}
	for i := range tools {
		if s := spec(&tools[i]); !surfaceTool(s) {
			ix.docs = append(ix.docs, int32(i))
		}
	}
	ix.lens = make([][4]int32, len(ix.docs))
	var total [4]int
	for i, at := range ix.docs {
		d := newSearchDoc(*ix.spec(&ix.tools[at]))
		counts := map[string]*posting{}
		for f, words := range d.fields {
			ix.lens[i][f] = int32(len(words))
			total[f] += len(words)
			for _, w := range words {
				p := counts[w]
				if p == nil {
					p = &posting{doc: int32(i)}
					counts[w] = p
				}
				p.tf[f]++
			}
		}
		for w, p := range counts {
			ix.postings[w] = append(ix.postings[w], *p)
		}
	}
	for f := range ix.meanLen {
		ix.meanLen[f] = max(float64(total[f])/float64(len(ix.docs)), 1)
	}
	return ix
}

// Search ranks the indexed tools against query as catalog.Catalog.Search
// does: best first, ties by name, tools sharing no word left out.
func (ix *Index[T]) Search(query string) []Hit[T] {
	terms := searchTerms(query)
	if len(terms) == 0 {
		return []Hit[T]{}
	}
	scores := map[int32]float64{}
	for _, term := range terms {
		ix.scoreTerm(term, scores)
	}
	hits := make([]Hit[T], 0, len(scores))
	for doc, s := range scores {
		if s > 0 {
			hits = append(hits, Hit[T]{Tool: ix.tools[ix.docs[doc]], Score: s})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return ix.spec(&hits[i].Tool).Name < ix.spec(&hits[j].Tool).Name
	})
	return hits
}

// scoreTerm adds one query word's BM25 score (k1 1.2, b 0.75), summed
// over fields with their weights, to every tool holding it.
func (ix *Index[T]) scoreTerm(term string, scores map[int32]float64) {
	const k1, b = 1.2, 0.75
	weights := [4]float64{weightName, weightTitle, weightArgs, weightDesc}
	ps := ix.postings[term]
	if len(ps) == 0 {
		return
	}
	df := float64(len(ps))
	idf := math.Log(1 + (float64(len(ix.docs))-df+0.5)/(df+0.5))
	for _, p := range ps {
		total := scores[p.doc]
		for f, tf := range p.tf {
			if tf == 0 {
				continue
			}
			norm := float64(ix.lens[p.doc][f]) / ix.meanLen[f]
			total += weights[f] * idf * float64(tf) * (k1 + 1) / (float64(tf) + k1*(1-b+b*norm))
		}
		scores[p.doc] = total
	}
}

// over returns the index for tools when they read as the indexed ones do
// (same names, titles, descriptions, input schemas and tags, in the same
// order), with tools (their workers and instances as they are now) in the
// hits; nil when the catalogue has changed. Spec sets are decoded once
// and shared, so the comparison is mostly of equal pointers.
func (ix *Index[T]) over(tools []T) *Index[T] {
	if len(tools) != len(ix.tools) {
		return nil
	}
	for i := range tools {
		if !sameSearchText(ix.spec(&tools[i]), ix.spec(&ix.tools[i])) {
			return nil
		}
	}
	return &Index[T]{tools: tools, spec: ix.spec, docs: ix.docs, lens: ix.lens, postings: ix.postings, meanLen: ix.meanLen}
}

// sameSearchText reports whether a and b give the same words to search
// (and the same tags, which make a tool an MCP surface tool or not).
func sameSearchText(a, b *envelope.ToolSpec) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		string(a.InputSchema) == string(b.InputSchema) && slices.Equal(a.Tags, b.Tags)
}

// Cache keeps the index of the last catalogue searched, so that repeated
// searches of an unchanged catalogue cost only their query: a
// catalog.Catalog keeps one for Search, and the MCP gateway one for its
// search tool. Give it the catalogue's tools in a stable order (a
// Listing's are sorted by name): a reordered catalogue reads as a changed
// one. The zero value is ready; it is safe for concurrent use.
type Cache[T any] struct {
	mu   sync.Mutex
	last *Index[T]
}

// index returns the index of tools: the last one while the catalogue's
// tools read the same (with tools, as they are now, in its hits), else a
// new one, kept.
func (c *Cache[T]) index(tools []T, spec func(*T) *envelope.ToolSpec) *Index[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil {
		if ix := c.last.over(tools); ix != nil {
			return ix
		}
	}
	c.last = New(tools, spec)
	return c.last
}

// Search ranks tools for query (see Index.Search), with their index kept
// for the next search of the same catalogue.
func (c *Cache[T]) Search(tools []T, spec func(*T) *envelope.ToolSpec, query string) []Hit[T] {
	return c.index(tools, spec).Search(query)
}
