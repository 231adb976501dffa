package catalog

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

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
func (c *Catalog) verifiedEntry(data []byte, workerID string) (catalogEntry, error) {
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

// SpecSet returns the spec set a beacon or registry key names by digest
// (wire.SpecsDigest of a catalogue answer's tools): from what this
// catalogue has already decoded, or asked of the first of workers (at
// most three; each given a second) whose answer matches it. With no
// workers it only looks, and fails at once for a set it has not seen. A
// lone worker whose answer names another set has changed its tools since
// its key was written (a worker registering its tools one by one rewrites
// the key each time): its own answer is the newer truth, and is returned.
func (c *Catalog) SpecSet(ctx context.Context, digest string, workers ...string) ([]envelope.ToolSpec, error) {
	if specs, ok := c.specs.get(digest); ok && digest != "" {
		return specs, nil
	}
	last := errSetUnseen
	for i, id := range workers {
		if i == maxSetAsks || ctx.Err() != nil {
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

// errSetUnseen says a spec set is not in the cache and no worker gave it.
var errSetUnseen = errors.New("spec set not seen, and no worker asked gave it")

// askWorker asks one worker for its catalogue entry.
func (c *Catalog) askWorker(ctx context.Context, workerID string, wait time.Duration) (catalogEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	msg, err := c.nc.RequestWithContext(ctx, c.subjects.WorkerCatalog(workerID), nil)
	if err != nil {
		return catalogEntry{}, err
	}
	return c.verifiedEntry(msg.Data, workerID)
}

// maxSetAsks is how many workers of one spec set are asked for it before
// the set is given up (and its workers listed as not fetched).
const maxSetAsks = 3

// setQuiet is how long a round of set requests waits past the last
// answer before the sets still missing are asked of their next worker.
const setQuiet = time.Second

// setAsk is one request for a spec set: the set's key and digest ("" for
// a worker that names none) and the worker asked.
type setAsk struct {
	key, digest, worker string
	lone                bool // the set's only worker: its own answer is the truth
	round               int
}

// setFetch is one batch of spec-set requests on one inbox: each answer's
// reply subject ends in its ask's token, random and used once, so a
// worker asked once cannot answer for another worker's ask by guessing
// its subject, nor count twice towards a round.
type setFetch struct {
	c     *Catalog
	need  map[string][]string // set key → its workers
	out   map[string][]envelope.ToolSpec
	inbox string
	asks  map[string]setAsk // reply token → the ask not yet answered
	ch    chan *nats.Msg
}

// askSets fills out with the spec sets of need (set key → its workers),
// asking one worker of each set on the worker's own catalogue subject:
// one request per distinct set, all published at once and answered on
// one inbox, so a cold catalogue of 10,000 workers in 500 sets moves 500
// answers, not 10,000. A set whose worker does not answer (within
// setQuiet of the last answer), or answers with another set while the
// set has other workers, is asked of its next worker, up to maxSetAsks.
// A set no worker gives is left out of out.
func (c *Catalog) askSets(ctx context.Context, need map[string][]string, out map[string][]envelope.ToolSpec) {
	if len(need) == 0 {
		return
	}
	f := &setFetch{c: c, need: need, out: out, inbox: c.nc.NewInbox(), asks: map[string]setAsk{}, ch: make(chan *nats.Msg, maxSetAsks*len(need))}
	sub, err := c.nc.ChanSubscribe(f.inbox+".*", f.ch)
	if err != nil {
		c.log.Debug("catalogue: spec sets not fetched", "err", err)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	keys := slices.Sorted(maps.Keys(need))
	for round := 0; round < maxSetAsks && len(keys) > 0 && ctx.Err() == nil; round++ {
		f.collect(ctx, round, f.send(keys, round))
		keys = slices.DeleteFunc(keys, func(k string) bool { _, ok := out[k]; return ok })
	}
}

// send asks each set of keys of its round-th worker, and returns how
// many requests went out.
func (f *setFetch) send(keys []string, round int) int {
	sent := 0
	for _, key := range keys {
		ids := f.need[key]
		if round >= len(ids) {
			continue
		}
		digest, _ := strings.CutPrefix(key, "worker:")
		if digest != key {
			digest = ""
		}
		a := setAsk{key: key, digest: digest, worker: ids[round], lone: len(ids) == 1, round: round}
		token := rand.Text()
		f.asks[token] = a
		reply := f.inbox + "." + token
		if err := f.c.nc.PublishRequest(f.c.subjects.WorkerCatalog(a.worker), reply, nil); err != nil {
			f.c.log.Debug("catalogue: spec set request not sent", "worker", a.worker, "err", err)
			continue
		}
		sent++
	}
	_ = f.c.nc.Flush()
	return sent
}

// collect takes answers until the sent requests of round have all been
// answered, setQuiet passes with no answer, or ctx ends. A late answer
// to an earlier round is used too, but does not count for this one.
func (f *setFetch) collect(ctx context.Context, round, sent int) {
	quiet := time.NewTimer(setQuiet)
	defer quiet.Stop()
	for got := 0; got < sent; {
		select {
		case <-ctx.Done():
			return
		case <-quiet.C:
			return
		case m := <-f.ch:
			if f.take(m) == round {
				got++
			}
			quiet.Reset(setQuiet)
		}
	}
}

// take uses one answer and returns the round of the request it answers
// (-1: none). The set asked for is resolved when the answer verifies and
// gives that set (or comes from the set's only worker, whose own answer
// is newer than its registry key).
func (f *setFetch) take(m *nats.Msg) int {
	token := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	a, asked := f.asks[token]
	if !asked {
		return -1 // not ours, or answered already
	}
	delete(f.asks, token)
	if _, done := f.out[a.key]; done {
		return a.round
	}
	e, err := f.c.verifiedEntry(m.Data, a.worker) // a 503 (no responders) has no data and fails here
	switch {
	case err != nil:
		f.c.log.Debug("catalogue: spec set request failed", "worker", a.worker, "err", err)
	case a.digest != "" && e.Specs != a.digest && !a.lone:
		f.c.log.Debug("catalogue: worker now hosts other tools than its registry key says", "worker", a.worker)
	default:
		f.out[a.key] = e.Tools
	}
	return a.round
}
