package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Describe returns the spec of tool, or tool_not_found when no worker
// hosts it, or forbidden when this NATS identity may not call it
// (whether or not a worker hosts it). The answer never depends on which
// worker happens to answer: the tool's subject is asked (one request, so
// a tool nobody hosts is tool_not_found at once where the server says no
// one listens, and a worker that has just started is found before it
// reaches the registry) while the catalogue (see List, whose scope rules
// apply) is read, and the catalogue decides: a tool it does not list, and
// no worker has answered for by then, is tool_not_found (across a service
// import the server never says that no one listens). When workers give
// different specs for the name, Describe returns the spec most of them
// give (ties: the lowest worker id's), always the same, and with it a
// tool_conflict Problem whose extension "conflicts" lists every spec
// given and its workers: a caller must not act on a description that
// another worker contradicts (docs/protocol.md §14.1).
func (c *Catalog) Describe(ctx context.Context, tool string) (envelope.ToolSpec, error) {
	if err := envelope.ValidateToolName(tool); err != nil {
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeInvalidInput, err.Error()).
			WithFix("Tool names are dot-separated segments of letters, digits, _ and -; list the tools on offer with List.", envelope.MaybeIncorrect)
	}
	a, err := c.decide(ctx, []string{tool})
	switch {
	case err != nil:
		return envelope.ToolSpec{}, c.undecidedProblem(ctx, tool, err)
	case !a.may(tool):
		return envelope.ToolSpec{}, c.notCallable(tool)
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan described, 1)
	go func() {
		spec, err := c.describeOne(dctx, tool)
		answers <- described{spec, err}
	}()
	reads := make(chan catalogRead, 1)
	go func() {
		entries, warnings, _, err := c.entries(dctx, innerRegistryWait, innerGatherWait)
		reads <- catalogRead{entries, warnings, err}
	}()
	var d described
	select {
	case d = <-answers:
		if d.err != nil {
			return envelope.ToolSpec{}, d.err
		}
		return c.describeListed(tool, &d, <-reads)
	case r := <-reads:
		if r.err != nil {
			return envelope.ToolSpec{}, r.err
		}
		if _, isListed := catalogToolNamed(r.entries, tool); isListed {
			d = <-answers // a worker the catalogue lists answers
		} else {
			select {
			case d = <-answers:
			default: // no worker answered while the catalogue was read
				return c.describeListed(tool, nil, r)
			}
		}
		if d.err != nil {
			return envelope.ToolSpec{}, d.err
		}
		return c.describeListed(tool, &d, r)
	}
}

// described is the answer on a tool's describe subject.
type described struct {
	spec envelope.ToolSpec
	err  error
}

// catalogRead is the catalogue as Describe reads it.
type catalogRead struct {
	entries  map[string]catalogEntry
	warnings []string
	err      error
}

// describeListed decides Describe's answer from the catalogue l and the
// tool subject's answer (nil when none came before the catalogue).
func (c *Catalog) describeListed(tool string, answered *described, l catalogRead) (envelope.ToolSpec, error) {
	if l.err != nil {
		return envelope.ToolSpec{}, l.err
	}
	t, isListed := catalogToolNamed(l.entries, tool)
	switch {
	case !isListed && outOfScope(l.warnings, tool):
		// Offered only by workers that may not host it (§14.1, "Scope").
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeToolNotFound, fmt.Sprintf("no worker may host tool %q: only workers of a pool outside its namespace offer it", tool))
	case !isListed && answered == nil:
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeToolNotFound, fmt.Sprintf("no worker hosts tool %q", tool))
	case !isListed:
		// Only a worker not yet in the catalogue hosts it: its answer is
		// the one there is.
		return answered.spec, nil
	}
	if answered != nil && !slices.ContainsFunc(append([]Variant{{Spec: t.Spec}}, t.Conflicts...), func(v Variant) bool { return sameSpec(v.Spec, answered.spec) }) {
		t.Conflicts = append(t.Conflicts, Variant{Spec: answered.spec, Workers: []string{}})
	}
	if len(t.Conflicts) > 0 {
		return t.Spec, c.conflictProblem(t)
	}
	return t.Spec, nil
}

// describeOne asks the tool's subject, which one worker hosting it answers.
func (c *Catalog) describeOne(ctx context.Context, tool string) (envelope.ToolSpec, error) {
	msg, err := c.nc.RequestWithContext(ctx, c.subjects.Describe(tool), nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeToolNotFound, fmt.Sprintf("no worker hosts tool %q", tool))
	case err != nil && ctx.Err() != nil:
		return envelope.ToolSpec{}, c.problems.Rebase(envelope.AsProblem(ctx.Err(), envelope.CodeTimeout))
	case err != nil:
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeConnectionLost, err.Error())
	}
	var spec envelope.ToolSpec
	if err := json.Unmarshal(msg.Data, &spec); err != nil {
		return envelope.ToolSpec{}, c.problems.New(envelope.CodeInternal, "malformed spec from worker: "+err.Error())
	}
	return spec, nil
}

// catalogToolNamed is the catalogue's entry for one tool (see
// buildListing), and false when no entry hosts it.
func catalogToolNamed(entries map[string]catalogEntry, name string) (Tool, bool) {
	vs := map[string]*Variant{}
	for _, e := range entries {
		for _, s := range e.Tools {
			if s.Name != name {
				continue
			}
			key := wire.SpecDigest(s)
			v := vs[key]
			if v == nil {
				v = &Variant{Spec: s}
				vs[key] = v
			}
			v.Workers = append(v.Workers, e.WorkerID)
		}
	}
	if len(vs) == 0 {
		return Tool{}, false
	}
	return catalogTool(vs), true
}

// conflictProblem says that workers give different specs for t: every
// spec given, the one returned first, each with its workers (none for a
// worker that answered on the tool's subject but is not in the catalogue).
func (c *Catalog) conflictProblem(t Tool) *envelope.Problem {
	variants := append([]Variant{{Spec: t.Spec, Workers: servedBy(t)}}, t.Conflicts...)
	return c.problems.New(envelope.CodeToolConflict, fmt.Sprintf(
		"workers give %d different specs for tool %q, so a call may reach any of them; the spec returned is the one most of them give (ties: the lowest worker id's), and the extension conflicts lists them all",
		len(variants), t.Spec.Name)).WithExtension("conflicts", variants)
}

// servedBy lists the workers giving t's own spec: its workers less those
// of its conflicts.
func servedBy(t Tool) []string {
	other := map[string]bool{}
	for _, v := range t.Conflicts {
		for _, w := range v.Workers {
			other[w] = true
		}
	}
	out := []string{}
	for _, w := range t.Workers {
		if !other[w] {
			out = append(out, w)
		}
	}
	return out
}
