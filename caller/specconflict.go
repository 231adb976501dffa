package caller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// WithSpec says the call was validated (or offered to a model) against
// spec, the tool's spec as the catalogue gave it: the call carries the
// spec's digest (docs/protocol.md §4.1) and runs only on a worker whose
// own spec of the tool is that one. A worker with another spec refuses it
// unrun (tool_conflict, ran "no"); the call is then sent again at once,
// for another worker of the tool to take, and when none with the spec
// takes it the tool_conflict Problem names the workers giving each spec.
// Build the option once per spec and reuse it: it digests the spec.
func WithSpec(spec envelope.ToolSpec) Option {
	digest := wire.SpecDigest(spec)
	return func(o *callOptions) { o.spec = digest }
}

// maxConflictRetries is how many times a call refused unrun by a worker
// with another spec of its tool is sent again, besides the retries of
// other failures: each refusal costs one round trip, and a queue group
// hands each attempt to any of its workers, so a call whose spec one
// worker in three lacks fails this way once in 3^17.
const maxConflictRetries = 16

// attempts is what the retry rule counts of one call's attempts.
type attempts struct {
	retried, conflicts int
	// refusedBy is each worker that refused the call for giving another
	// spec of the tool, and its spec's digest.
	refusedBy map[string]string
}

// again reports whether a failed attempt is made again, after its
// retry_after (false when ctx ends first). A worker's refusal for giving
// another spec than the call's is retried on a budget of its own
// (maxConflictRetries), unless retries are off: it is the queue group's
// choice of worker that failed, not the call.
func (c *Caller) again(ctx context.Context, p *envelope.Problem, o callOptions, a *attempts) bool {
	if worker, digest, ok := specRefusal(p); ok {
		if a.refusedBy == nil {
			a.refusedBy = map[string]string{}
		}
		a.refusedBy[worker] = digest
		if o.retries == 0 || a.conflicts >= maxConflictRetries {
			return false
		}
		a.conflicts++
		return c.waitRetry(ctx, p)
	}
	if a.retried >= o.retries || !retrySafe(p, o) {
		return false
	}
	a.retried++
	return c.waitRetry(ctx, p)
}

// specRefusal reports whether p is a worker's refusal of a call
// validated against another spec than its own, naming the worker and
// its spec's digest.
func specRefusal(p *envelope.Problem) (worker, digest string, ok bool) {
	if p == nil || p.Code != envelope.CodeToolConflict || p.Ran() != envelope.RanNo || !p.Transient() {
		return "", "", false
	}
	worker, _ = p.Extensions["worker"].(string)
	digest, _ = p.Extensions["spec_digest"].(string)
	return worker, digest, worker != ""
}

// conflictListWait bounds the catalogue read that names the workers of
// each spec in a call's final tool_conflict Problem.
const conflictListWait = time.Second

// settled is the terminal event a call reports: a tool_conflict refusal
// that ended the retries says which workers refused it and, from the
// catalogue, which workers give each spec of the tool (extension
// "specs": each spec's digest and workers, the call's first).
func (c *Caller) settled(ctx context.Context, tool string, o callOptions, p *envelope.Problem, ev envelope.ToolEvent, a attempts) envelope.ToolEvent {
	if _, _, ok := specRefusal(p); !ok || o.spec == "" {
		return ev
	}
	refused := slices.Sorted(maps.Keys(a.refusedBy))
	detail := fmt.Sprintf("no worker giving the spec of tool %q that the call was validated against (digest %s) took it in %d attempts; workers giving another spec refused it unrun: %s",
		tool, o.spec, a.conflicts+1, strings.Join(refused, ", "))
	q := c.problems.New(envelope.CodeToolConflict, detail).WithRan(envelope.RanNo).
		WithExtension("call_spec_digest", o.spec).WithExtension("refused_by", a.refusedBy)
	lctx, cancel := context.WithTimeout(ctx, conflictListWait)
	defer cancel()
	if variants := c.specVariants(lctx, tool, o.spec); len(variants) > 0 {
		q = q.WithExtension("specs", variants)
	}
	return envelope.ErrorEvent(q)
}

// specVariant is one spec of a tool as a tool_conflict Problem names it.
type specVariant struct {
	SpecDigest string   `json:"spec_digest"`
	Workers    []string `json:"workers"`
}

// specVariants lists the specs the catalogue has of tool with their
// workers, the one of digest first; nil when the catalogue cannot say.
func (c *Caller) specVariants(ctx context.Context, tool, digest string) []specVariant {
	l, err := c.cat.List(ctx, conflictListWait)
	if err != nil {
		return nil
	}
	i := slices.IndexFunc(l.Tools, func(t catalog.Tool) bool { return t.Spec.Name == tool })
	if i < 0 {
		return nil
	}
	t := l.Tools[i]
	other := map[string]bool{}
	var out []specVariant
	for _, v := range t.Conflicts {
		out = append(out, specVariant{SpecDigest: wire.SpecDigest(v.Spec), Workers: v.Workers})
		for _, w := range v.Workers {
			other[w] = true
		}
	}
	main := specVariant{SpecDigest: wire.SpecDigest(t.Spec), Workers: slices.DeleteFunc(slices.Clone(t.Workers), func(w string) bool { return other[w] })}
	out = append([]specVariant{main}, out...)
	slices.SortStableFunc(out, func(a, b specVariant) int {
		switch {
		case a.SpecDigest == digest && b.SpecDigest != digest:
			return -1
		case b.SpecDigest == digest && a.SpecDigest != digest:
			return 1
		}
		return 0
	})
	return out
}
