package caller

import (
	"context"
	"encoding/json"
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
func (c *Caller) registrySnapshot(ctx context.Context) (map[string]registered, error) {
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
	out := map[string]registered{}
	prefix := "$KV." + bucket + "."
	for {
		batch, err := cons.FetchNoWait(1024)
		if err != nil {
			return nil, err
		}
		n, last := 0, false
		for m := range batch.Messages() {
			n++
			last = applyRegistryMsg(out, prefix, m) || last
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, err
		}
		if n == 0 || last {
			return out, nil
		}
	}
}

// applyRegistryMsg applies one registry message to out; it reports
// whether the message was the last one pending.
func applyRegistryMsg(out map[string]registered, prefix string, m jetstream.Msg) bool {
	md, err := m.Metadata()
	if err != nil {
		return false
	}
	key, ok := strings.CutPrefix(m.Subject(), prefix)
	if !ok {
		return md.NumPending == 0
	}
	switch m.Headers().Get("KV-Operation") {
	case "DEL", "PURGE":
		delete(out, key)
		return md.NumPending == 0
	}
	var b wire.Beacon
	if json.Unmarshal(m.Data(), &b) != nil || b.WorkerID != key || !wire.ValidWorkerID(key) {
		return md.NumPending == 0 // not a worker's key: nothing to list
	}
	out[key] = registered{beacon: b, written: md.Timestamp}
	return md.NumPending == 0
}
