package worker

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// subscribeDiscovery answers the ADR-32 service discovery subjects
// ($SRV.PING|INFO|STATS, bare, by name, and by name and id) so stock NATS
// tooling sees every worker as a "toolmesh" service with one endpoint per
// tool. nats.go's micro package is not used to serve calls: its stats time
// the subscription callback, which for a worker that hands calls to
// concurrent goroutines would report near-zero processing times. The
// worker keeps its own counters from admission to terminal event and
// reuses micro's response types for the wire shape.
func (w *Worker) subscribeDiscovery() error {
	verbs := map[string]func() any{
		"PING":  w.pingResponse,
		"INFO":  w.infoResponse,
		"STATS": w.statsResponse,
	}
	for verb, build := range verbs {
		for _, subj := range []string{wire.Discovery(verb, "", ""), wire.Discovery(verb, w.cfg.Name, ""), wire.Discovery(verb, w.cfg.Name, w.cfg.ID)} {
			build := build
			sub, err := w.nc.Subscribe(subj, func(m *nats.Msg) {
				b, _ := json.Marshal(build())
				_ = m.Respond(b)
			})
			if err != nil {
				return err
			}
			w.ctlSubs = append(w.ctlSubs, sub)
		}
	}
	return nil
}

func (w *Worker) identity() micro.ServiceIdentity {
	md := map[string]string{}
	for k, v := range w.cfg.Metadata {
		md[k] = v
	}
	// Meshes under different prefixes may share an account and so answer
	// the same $SRV subjects; the prefix tells their workers apart.
	md["toolmesh.prefix"] = w.subjects.Root()
	return micro.ServiceIdentity{Name: w.cfg.Name, ID: w.cfg.ID, Version: w.cfg.Version, Metadata: md}
}

func (w *Worker) pingResponse() any {
	return micro.Ping{ServiceIdentity: w.identity(), Type: micro.PingResponseType}
}

func (w *Worker) sortedTools() []*tool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*tool, 0, len(w.tools))
	for _, t := range w.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

func (w *Worker) infoResponse() any {
	eps := []micro.EndpointInfo{}
	for _, t := range w.sortedTools() {
		md := map[string]string{"toolmesh.tool": t.spec.Name}
		if t.spec.Description != "" {
			md["description"] = t.spec.Description
		}
		eps = append(eps, micro.EndpointInfo{Name: endpointName(t.spec.Name), Subject: w.subjects.Call(t.spec.Name), QueueGroup: w.subjects.QueueGroup(), Metadata: md})
	}
	return micro.Info{ServiceIdentity: w.identity(), Type: micro.InfoResponseType, Description: w.cfg.Description, Endpoints: eps}
}

func (w *Worker) statsResponse() any {
	eps := []*micro.EndpointStats{}
	for _, t := range w.sortedTools() {
		t.statsMu.Lock()
		s := &micro.EndpointStats{Name: endpointName(t.spec.Name), Subject: w.subjects.Call(t.spec.Name), QueueGroup: w.subjects.QueueGroup(),
			NumRequests: t.requests, NumErrors: t.errors, LastError: t.lastError, ProcessingTime: t.busy, Data: t.load.data()}
		if t.requests > 0 {
			s.AverageProcessingTime = t.busy / time.Duration(t.requests)
		}
		t.statsMu.Unlock()
		eps = append(eps, s)
	}
	return micro.Stats{ServiceIdentity: w.identity(), Type: micro.StatsResponseType, Started: w.started, Endpoints: eps}
}

// endpointName is a tool's ADR-32 endpoint name. ADR-32 names must match
// ^[A-Za-z0-9_-]+$ (stock `nats micro` refuses a whole service otherwise),
// and tool names may hold dots, so each dot becomes an underscore; the
// real tool name stays in the endpoint's metadata (toolmesh.tool) and its
// subject is the real call subject.
func endpointName(tool string) string { return strings.ReplaceAll(tool, ".", "_") }
