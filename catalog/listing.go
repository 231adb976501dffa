package catalog

import (
	"slices"
	"sort"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Tool is one tool as the catalogue sees it across the fleet.
type Tool struct {
	Spec envelope.ToolSpec `json:"spec"`
	// Instances counts the workers hosting the tool.
	Instances int      `json:"instances"`
	Workers   []string `json:"workers"`
	// Conflicts lists the other specs some workers give for the same
	// name (Spec is the one most of them give): a conflict to resolve,
	// shown rather than one spec or another by chance.
	Conflicts []Variant `json:"conflicts,omitempty"`
}

// Variant is one spec given for a tool name, and the workers giving it.
type Variant struct {
	Spec    envelope.ToolSpec `json:"spec"`
	Workers []string          `json:"workers"`
}

// Listing is the mesh's tools gathered from every worker that answered.
// Complete is true only when the catalogue can know it has every worker:
// the mesh's JetStream worker registry lists which workers exist and each
// of them answered. Otherwise Complete is false and ScopeWarnings say why
// (no registry, or the registered workers that stayed silent).
type Listing struct {
	Tools         []Tool   `json:"tools"`
	Workers       int      `json:"workers"`
	Complete      bool     `json:"complete"`
	ScopeWarnings []string `json:"scope_warnings,omitempty"`
}

// buildListing lists each tool once, with the workers hosting it. Workers
// that disagree about a tool's spec are a conflict, shown as one: the
// spec most workers give (ties: the lowest worker id's) is the tool's, and
// every other is listed in Conflicts — never one or the other by chance.
func buildListing(entries map[string]catalogEntry) Listing {
	// Workers of one spec set share its decoded specs (one slice), so a
	// spec's address names it: only a tool given by more than one set is
	// compared by its JSON, and each set's tools are visited once.
	byName := map[string]map[*envelope.ToolSpec][]string{} // name → spec → its workers
	for _, g := range specGroups(entries) {
		for i := range g.tools {
			s := &g.tools[i]
			vs := byName[s.Name]
			if vs == nil {
				vs = map[*envelope.ToolSpec][]string{}
				byName[s.Name] = vs
			}
			vs[s] = append(vs[s], g.workers...)
		}
	}
	cat := Listing{Tools: make([]Tool, 0, len(byName)), Workers: len(entries)}
	for _, vs := range byName {
		cat.Tools = append(cat.Tools, catalogTool(variantsOf(vs)))
	}
	sort.Slice(cat.Tools, func(i, j int) bool { return cat.Tools[i].Spec.Name < cat.Tools[j].Spec.Name })
	return cat
}

// specGroup is the workers (sorted) sharing one decoded spec set.
type specGroup struct {
	tools   []envelope.ToolSpec
	workers []string
}

// specGroups groups entries by the spec slice they share.
func specGroups(entries map[string]catalogEntry) []*specGroup {
	type slice struct {
		first *envelope.ToolSpec
		n     int
	}
	index := map[slice]*specGroup{}
	var out []*specGroup
	for _, e := range entries {
		if len(e.Tools) == 0 {
			continue
		}
		key := slice{&e.Tools[0], len(e.Tools)}
		g := index[key]
		if g == nil {
			g = &specGroup{tools: e.Tools}
			index[key] = g
			out = append(out, g)
		}
		g.workers = append(g.workers, e.WorkerID)
	}
	for _, g := range out {
		slices.Sort(g.workers)
	}
	return out
}

// variantsOf merges one tool's specs that are one spec (copies from
// different spec sets, of one wire.SpecDigest) into variants, keyed by
// that digest: the digest a caller names the spec it was offered by, and
// a worker checks a call against (docs/protocol.md §14.1).
func variantsOf(vs map[*envelope.ToolSpec][]string) map[string]*Variant {
	out := make(map[string]*Variant, len(vs))
	for s, ids := range vs {
		key := ""
		if len(vs) > 1 {
			key = wire.SpecDigest(*s)
		}
		v := out[key]
		if v == nil {
			v = &Variant{Spec: *s}
			out[key] = v
		}
		v.Workers = append(v.Workers, ids...)
	}
	return out
}

// catalogTool makes one tool's entry from its variants (spec → workers).
func catalogTool(vs map[string]*Variant) Tool {
	variants := make([]Variant, 0, len(vs))
	for _, v := range vs {
		sortOnce(v.Workers)
		variants = append(variants, *v)
	}
	sort.Slice(variants, func(i, j int) bool {
		if len(variants[i].Workers) != len(variants[j].Workers) {
			return len(variants[i].Workers) > len(variants[j].Workers)
		}
		return variants[i].Workers[0] < variants[j].Workers[0]
	})
	t := Tool{Spec: variants[0].Spec}
	for _, v := range variants {
		t.Instances += len(v.Workers)
		t.Workers = append(t.Workers, v.Workers...)
	}
	sortOnce(t.Workers)
	if len(variants) > 1 {
		t.Conflicts = variants[1:]
	}
	return t
}

// sortOnce sorts ids unless they are sorted already (a tool given by one
// spec set has its set's sorted workers).
func sortOnce(ids []string) {
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
}
