package caller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// specCache holds decoded spec sets by digest (wire.SpecsDigest). A
// fleet's replicas share a handful of spec sets, so a catalogue of 10,000
// workers decodes and fetches each set once. The zero value is ready.
type specCache struct {
	mu   sync.Mutex
	sets map[string][]envelope.ToolSpec
}

// maxSpecSets bounds the cache; past it the cache starts over.
const maxSpecSets = 4096

func (sc *specCache) get(digest string) ([]envelope.ToolSpec, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	s, ok := sc.sets[digest]
	return s, ok
}

func (sc *specCache) put(digest string, specs []envelope.ToolSpec) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.sets == nil || len(sc.sets) >= maxSpecSets {
		sc.sets = map[string][]envelope.ToolSpec{}
	}
	sc.sets[digest] = specs
}

// verifiedEntry decodes a catalogue answer from workerID. When the answer
// names its spec set's digest, the tools' bytes must hash to it (a worker
// cannot pass one set off as another), and the decoded set is cached.
func (c *Caller) verifiedEntry(data []byte, workerID string) (catalogEntry, error) {
	var raw struct {
		WorkerID   string          `json:"worker_id"`
		Tools      json.RawMessage `json:"tools"`
		IntervalMS int64           `json:"interval_ms"`
		Specs      string          `json:"specs"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return catalogEntry{}, err
	}
	if workerID != "" && raw.WorkerID != workerID {
		return catalogEntry{}, fmt.Errorf("worker %s answered for %q", workerID, raw.WorkerID)
	}
	e := catalogEntry{WorkerID: raw.WorkerID, IntervalMS: raw.IntervalMS, Specs: raw.Specs}
	if raw.Specs != "" {
		if wire.SpecsDigest(raw.Tools) != raw.Specs {
			return catalogEntry{}, fmt.Errorf("worker %s: its tools do not match their digest", raw.WorkerID)
		}
		if specs, ok := c.specs.get(raw.Specs); ok {
			e.Tools = specs
			return e, nil
		}
	}
	// Shapes checked, schemas not compiled: a caller lists specs and
	// sends calls; the worker compiles its schemas and validates calls.
	tools, err := envelope.ParseToolSpecs(raw.Tools)
	if err != nil {
		return catalogEntry{}, err
	}
	e.Tools = tools
	if raw.Specs != "" {
		c.specs.put(raw.Specs, e.Tools)
	}
	return e, nil
}

// fetchSpecs returns the spec set named digest, from the cache or from
// the first of workers (at most three are asked) whose answer matches it.
// A lone worker whose answer names another set has changed its tools
// since its registry key was written (a worker registering its tools one
// by one rewrites the key each time): its own answer is the newer truth,
// and it is what the worker is listed with, rather than leaving a live
// worker out of the listing.
func (c *Caller) fetchSpecs(ctx context.Context, digest string, workers []string) ([]envelope.ToolSpec, error) {
	if specs, ok := c.specs.get(digest); ok && digest != "" {
		return specs, nil
	}
	var last error
	for i, id := range workers {
		if i == 3 || ctx.Err() != nil {
			break
		}
		e, err := c.askWorker(ctx, id, time.Second)
		switch {
		case err != nil:
			last = err
		case digest != "" && e.Specs != digest && len(workers) > 1:
			last = fmt.Errorf("worker %s now hosts other tools than its registry key says", id)
		default:
			return e.Tools, nil
		}
	}
	return nil, last
}

// askWorker asks one worker for its catalogue entry.
func (c *Caller) askWorker(ctx context.Context, workerID string, wait time.Duration) (catalogEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	msg, err := c.nc.RequestWithContext(ctx, c.subjects.WorkerCatalog(workerID), nil)
	if err != nil {
		return catalogEntry{}, err
	}
	return c.verifiedEntry(msg.Data, workerID)
}
