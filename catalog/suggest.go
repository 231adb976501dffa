package catalog

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/internal/configkeys"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// knownNames keeps the names of the tools of the catalogue's last read on
// one connection: what this identity may call (the view, tenantview.go),
// for suggesting a name without a round trip.
type knownNames struct {
	mu    sync.Mutex
	epoch uint64 // the connection's reconnect count+1 when read; 0: never
	names []string
	// lookup lets one catalogue read for a suggestion run at a time.
	lookup sync.Mutex
}

// suggestWait bounds the one catalogue read Suggest makes when it has no
// names yet.
const suggestWait = 2 * time.Second

// remember keeps the names of the tools of entries, read at epoch.
func (k *knownNames) remember(epoch uint64, entries map[string]catalogEntry) {
	var names []string
	for _, e := range entries {
		for i := range e.Tools {
			if _, _, surface := wire.SplitMCPSurface(e.Tools[i].Name, e.Tools[i].Tags); !surface {
				names = append(names, e.Tools[i].Name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.epoch, k.names = epoch, names
}

// get returns the names kept for epoch; false when there are none.
func (k *knownNames) get(epoch uint64) ([]string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.names, k.epoch == epoch && k.epoch != 0
}

// Suggest returns the name of the tool this identity may call that is
// nearest to name (a likely typo first, else the least edit distance),
// "" when it knows of none, or only of name itself. It is for the Problem
// of a call that found no worker: it uses the names of the catalogue's
// last read on this connection, which the view has already kept to the
// tools this identity may call (so it never suggests another tenant's),
// and costs no round trip; with none yet it reads the catalogue once,
// within ctx and suggestWait, a read that concurrent Suggests share.
func (c *Catalog) Suggest(ctx context.Context, name string) string {
	names, ok := c.known.get(c.epoch())
	if !ok {
		c.known.lookup.Lock()
		defer c.known.lookup.Unlock()
		if names, ok = c.known.get(c.epoch()); !ok {
			ctx, cancel := context.WithTimeout(ctx, suggestWait)
			defer cancel()
			if _, _, _, err := c.entries(ctx, suggestWait, innerGatherWait); err != nil {
				return ""
			}
			names, _ = c.known.get(c.epoch())
		}
	}
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == name })
	return configkeys.Nearest(name, names)
}
