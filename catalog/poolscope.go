package catalog

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// A worker may advertise only what it may host (protocol v2, §14.1,
// "Scope"). A pooled worker's id is <pool>.<ulid>, and the operator's NATS
// permissions give each pool its own subjects (deploy/secure: the demo
// pool subscribes toolmesh.call.demo.>, toolmesh.catalog.demo.> and
// toolmesh.ctl.demo.> only). So the catalogue keeps from a worker's entry
// only the tools in its pool's namespace, <pool>.*, and believes the id an
// answer claims only when the worker answered on a subject bound to that
// id (<p>.catalog.<worker-id>), which only a worker the permissions let
// hold it can: the permissions are the one source of truth, not a list of
// the catalogue's own.

// inScope keeps only the tools of e within its worker's pool namespace,
// saying which it dropped.
func inScope(e catalogEntry) (catalogEntry, []string) {
	pool := wire.PoolOf(e.WorkerID)
	if pool == "" {
		return e, nil
	}
	var dropped []string
	keep := make([]envelope.ToolSpec, 0, len(e.Tools))
	for _, s := range e.Tools {
		if strings.HasPrefix(s.Name, pool+".") {
			keep = append(keep, s)
		} else {
			dropped = append(dropped, s.Name)
		}
	}
	if len(dropped) == 0 {
		return e, nil
	}
	e.Tools = keep // a new slice: the cached spec set stays whole
	return e, []string{fmt.Sprintf("worker %s (pool %s) offers %s%s%s.*: not listed",
		e.WorkerID, pool, strings.Join(dropped, ", "), outsideNamespace, pool)}
}

// outsideNamespace separates, in a scope warning of inScope, the tools
// dropped from the pool they fall outside of.
const outsideNamespace = " outside its pool's namespace "

// outOfScope reports whether a scope warning of inScope names tool among
// those it dropped.
func outOfScope(warnings []string, tool string) bool {
	for _, w := range warnings {
		_, rest, ok := strings.Cut(w, ") offers ")
		names, _, found := strings.Cut(rest, outsideNamespace)
		if ok && found && slices.Contains(strings.Split(names, ", "), tool) {
			return true
		}
	}
	return false
}

// trustedSets remembers the (spec set, pool) pairs a worker has answered
// for on its own catalogue subject: a broadcast answer naming one needs
// no check of its own.
type trustedSets struct {
	mu   sync.Mutex
	sets map[string]bool
}

// maxTrustedSets bounds the pairs remembered.
const maxTrustedSets = 4096

func (t *trustedSets) has(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sets[key]
}

func (t *trustedSets) add(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sets == nil || len(t.sets) >= maxTrustedSets {
		t.sets = map[string]bool{}
	}
	t.sets[key] = true
}

// trustKey names an entry's (spec set, pool) pair; "" when the entry
// names no spec set, and so must be checked on its own.
func trustKey(e catalogEntry) string {
	if e.Specs == "" {
		return ""
	}
	return e.Specs + "|" + wire.PoolOf(e.WorkerID)
}

// confirmSenders checks the worker ids that broadcast answers claimed:
// for each (spec set, pool) pair not yet trusted, the claiming workers
// are asked on their own catalogue subjects until one answers with the
// same set; an id that does not is dropped, with a warning.
func (c *Catalog) confirmSenders(ctx context.Context, entries map[string]catalogEntry) []string {
	claims := map[string][]string{} // trust key → worker ids ("" key: one group per id)
	for id, e := range entries {
		k := trustKey(e)
		if k != "" && c.trusted.has(k) {
			continue
		}
		if k == "" {
			k = "worker:" + id
		}
		claims[k] = append(claims[k], id)
	}
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for k, ids := range claims {
		sort.Strings(ids)
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := c.confirmClaim(ctx, k, ids, entries)
			mu.Lock()
			bad = append(bad, b...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Strings(bad)
	warnings := make([]string, 0, len(bad))
	for _, id := range bad {
		delete(entries, id)
		warnings = append(warnings, fmt.Sprintf("a catalogue answer claimed to be worker %s, which does not answer on its own subject: not listed", id))
	}
	return warnings
}

// scoped keeps each entry's tools within its worker's pool namespace (see
// inScope), returning the warnings.
func scoped(entries map[string]catalogEntry) []string {
	var warnings []string
	for id, e := range entries {
		e, w := inScope(e)
		entries[id] = e
		warnings = append(warnings, w...)
	}
	sort.Strings(warnings)
	return warnings
}

// confirmClaim asks the workers ids, claiming one trust key, on their own
// subjects until one confirms the key's spec set, and returns the ids
// that were asked and did not.
func (c *Catalog) confirmClaim(ctx context.Context, key string, ids []string, entries map[string]catalogEntry) []string {
	var bad []string
	for _, id := range ids {
		e, err := c.askWorker(ctx, id, time.Second)
		if err == nil && e.Specs == entries[id].Specs {
			if trustKey(e) != "" {
				c.trusted.add(trustKey(e))
			}
			if !strings.HasPrefix(key, "worker:") {
				return bad // the pair is confirmed: the other claims add no tool
			}
			continue
		}
		bad = append(bad, id)
	}
	return bad
}
