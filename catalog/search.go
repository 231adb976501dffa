package catalog

import (
	"context"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/toolsearch"
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
// searches cost the query's postings, not the catalogue's size.
func (c *Catalog) Search(ctx context.Context, query string) ([]SearchHit, error) {
	l, err := c.listing(ctx, innerRegistryWait, innerGatherWait)
	if err != nil {
		return nil, err
	}
	return searchHits(c.search.Search(l.Tools, toolSpec, query)), nil
}

// toolSpec is a catalogue tool's spec, as package toolsearch reads it.
func toolSpec(t *Tool) *envelope.ToolSpec { return &t.Spec }

// searchHits are hits of a catalogue's tools as SearchHits (the same
// shape).
func searchHits(hits []toolsearch.Hit[Tool]) []SearchHit {
	out := make([]SearchHit, len(hits))
	for i, h := range hits {
		out[i] = SearchHit(h)
	}
	return out
}
