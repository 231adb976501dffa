package catalog

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// registered is one worker as the registry lists it.
type registered struct {
	beacon  wire.Beacon
	written time.Time // when the worker last wrote its key (server time)
}

// errNoJetStream says why a mesh without JetStream has no registry.
var errNoJetStream = errors.New("JetStream is not enabled on this server")

// errNoJetStreamAPI says why an identity without the JetStream API (a
// tenant under deploy/secure) has no registry.
var errNoJetStreamAPI = errors.New("this identity may not use the JetStream API that holds the worker registry")

// registrySnapshot reads every worker's registry key in one pass: an
// ordered consumer over the bucket's stream from its first message until
// none is pending. kv.Keys (a last-per-subject consumer) can come back
// short while workers rewrite their keys; reading every message cannot: a
// key rewritten during the pass had its old message either delivered
// already or removed only after its new one was appended behind the
// pass's position, which the pass reaches before it sees nothing pending.
// nil (with the reason) when the mesh has no registry.
func (c *Catalog) registrySnapshot(ctx context.Context) (map[string]registered, error) {
	if on, _ := c.nc.ConnectedServerJetStream(); !on {
		return nil, errNoJetStream
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, err
	}
	bucket := c.subjects.RegistryBucket()
	cons, err := js.OrderedConsumer(ctx, "KV_"+bucket, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, errors.New("no worker has created the registry bucket " + bucket)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return nil, errNoJetStream
	case err != nil:
		return nil, err
	}
	return readRegistry(ctx, js, "KV_"+bucket, cons, "$KV."+bucket+".")
}

// readRegistry reads the registry stream through cons until a message
// says none is pending. A fetch that finds nothing is the end only when
// the stream holds no message: a consumer just made may not yet have the
// stream's messages ready for its first fetch, and taking that empty
// answer for an empty registry would list no worker and call the listing
// complete (seen right after a worker's Announce). So an empty fetch of a
// stream that holds messages is retried, with a short pause that grows,
// until ctx ends.
func readRegistry(ctx context.Context, js jetstream.JetStream, stream string, cons jetstream.Consumer, prefix string) (map[string]registered, error) {
	var out map[string]registered // sized by the first message's count of those pending
	var read uint64               // the highest stream sequence read
	pause := time.Millisecond
	for {
		batch, err := cons.FetchNoWait(1024)
		if err != nil {
			return nil, err
		}
		n, last := 0, false
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			if out == nil {
				out = make(map[string]registered, min(md.NumPending+1, maxRegistryHint))
			}
			read = max(read, md.Sequence.Stream)
			last = applyRegistryMsg(out, prefix, m, md) || last
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, err
		}
		if last {
			return orEmpty(out), nil
		}
		if n > 0 {
			continue
		}
		st, err := js.Stream(ctx, stream) // asked only now: most passes end on a message
		if err != nil {
			return nil, err
		}
		info := st.CachedInfo()
		// Past the stream's last message (those after the pass's
		// position may have expired meanwhile), or nothing stored.
		if info.State.Msgs == 0 || info.State.LastSeq <= read {
			return orEmpty(out), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// maxRegistryHint bounds the registry map's initial size.
const maxRegistryHint = 1 << 20

// orEmpty is reg, or an empty registry when no message was read.
func orEmpty(reg map[string]registered) map[string]registered {
	if reg == nil {
		return map[string]registered{}
	}
	return reg
}

// applyRegistryMsg applies one registry message (md its metadata) to
// out; it reports whether the message was the last one pending.
func applyRegistryMsg(out map[string]registered, prefix string, m jetstream.Msg, md *jetstream.MsgMetadata) bool {
	key, ok := strings.CutPrefix(m.Subject(), prefix)
	if !ok {
		return md.NumPending == 0
	}
	switch m.Headers().Get("KV-Operation") {
	case "DEL", "PURGE":
		delete(out, key)
		return md.NumPending == 0
	}
	b, err := wire.ParseBeacon(m.Data())
	if err != nil || b.WorkerID != key || !wire.ValidWorkerID(key) {
		return md.NumPending == 0 // not a worker's key: nothing to list
	}
	out[key] = registered{beacon: b, written: md.Timestamp}
	return md.NumPending == 0
}
