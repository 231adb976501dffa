package catalog

import (
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// searchIndex is a catalogue's tools indexed for Search's BM25 ranking:
// each word's postings (the tools holding it, with its count in each
// field) and each field's mean length, so a query costs the postings of
// its words rather than a pass over every tool. Build it once per
// catalogue with newSearchIndex; it is read-only afterwards and safe for
// concurrent use.
type searchIndex struct {
	tools    []Tool     // the catalogue's tools, shared with it
	docs     []int32    // the searchable ones (not MCP surface tools): their places in tools
	lens     [][4]int32 // each searchable tool's field lengths in words
	postings map[string][]posting
	meanLen  [4]float64
}

// posting is one tool holding a word: its index in docs and the word's
// count in each field.
type posting struct {
	doc int32
	tf  [4]int32
}

// newSearchIndex indexes cat's tools (MCP surface tools left out, as
// Catalog.Search says). The index shares cat.Tools: leave them unchanged
// while it is in use.
func newSearchIndex(cat Listing) *searchIndex {
	ix := &searchIndex{tools: cat.Tools, postings: map[string][]posting{}}
	for i := range cat.Tools {
		if _, _, surface := wire.SplitMCPSurface(cat.Tools[i].Spec.Name, cat.Tools[i].Spec.Tags); !surface {
			ix.docs = append(ix.docs, int32(i))
		}
	}
	ix.lens = make([][4]int32, len(ix.docs))
	var total [4]int
	for i, at := range ix.docs {
		d := newSearchDoc(ix.tools[at].Spec)
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

// search ranks the indexed tools against query as Catalog.Search does.
func (ix *searchIndex) search(query string) []SearchHit {
	terms := searchTerms(query)
	if len(terms) == 0 {
		return []SearchHit{}
	}
	scores := map[int32]float64{}
	for _, term := range terms {
		ix.scoreTerm(term, scores)
	}
	hits := make([]SearchHit, 0, len(scores))
	for doc, s := range scores {
		if s > 0 {
			hits = append(hits, SearchHit{Tool: ix.tools[ix.docs[doc]], Score: s})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Tool.Spec.Name < hits[j].Tool.Spec.Name
	})
	return hits
}

// scoreTerm adds one query word's BM25 score (k1 1.2, b 0.75), summed
// over fields with their weights, to every tool holding it.
func (ix *searchIndex) scoreTerm(term string, scores map[int32]float64) {
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

// over returns the index for cat when cat's tools read as the indexed
// ones do (same names, titles, descriptions, input schemas and tags, in
// the same order), with cat's tools (their workers and instances as they
// are now) in the hits; nil when the catalogue has changed. Spec sets are
// decoded once and shared, so the comparison is mostly of equal pointers.
func (ix *searchIndex) over(cat Listing) *searchIndex {
	if len(cat.Tools) != len(ix.tools) {
		return nil
	}
	for i := range cat.Tools {
		if !sameSearchText(&cat.Tools[i].Spec, &ix.tools[i].Spec) {
			return nil
		}
	}
	return &searchIndex{tools: cat.Tools, docs: ix.docs, lens: ix.lens, postings: ix.postings, meanLen: ix.meanLen}
}

// sameSearchText reports whether a and b give the same words to search
// (and the same tags, which make a tool an MCP surface tool or not).
func sameSearchText(a, b *envelope.ToolSpec) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		string(a.InputSchema) == string(b.InputSchema) && slices.Equal(a.Tags, b.Tags)
}

// SearchCache keeps the index of the last catalogue searched, so that
// repeated searches of an unchanged catalogue cost only their query: a
// Catalog keeps one for Search, and the MCP gateway one for its search
// tool. Give it the catalogue's tools in a stable order (a Listing's are
// sorted by name): a reordered catalogue reads as a changed one. The zero
// value is ready; it is safe for concurrent use.
type SearchCache struct {
	mu   sync.Mutex
	last *searchIndex
}

// index returns the index of cat: the last one while the catalogue's tools
// read the same (with cat's tools, as they are now, in its hits), else a
// new one, kept.
func (sc *SearchCache) index(cat Listing) *searchIndex {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.last != nil {
		if ix := sc.last.over(cat); ix != nil {
			return ix
		}
	}
	sc.last = newSearchIndex(cat)
	return sc.last
}

// Search ranks cat's tools for query (see Catalog.Search), with the index
// of cat kept for the next search of the same catalogue.
func (sc *SearchCache) Search(cat Listing, query string) []SearchHit {
	return sc.index(cat).search(query)
}
