package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// benchCall is one call of one side; nil means the scenario has no such side.
type benchCall func(b *bencher, ctx context.Context) error

// benchScenario is one row of the report: its sides, interleaved in rounds,
// and its targets. Adding a row is adding one entry to
// benchScenarios.
type benchScenario struct {
	name     string
	inFlight int
	peers    string
	raw      benchCall
	micro    benchCall
	toolmesh benchCall
	// versus are the peers users would pick instead (MCP over HTTP,
	// gRPC), measured in the same rounds.
	versus []versusCall
	goals  []benchGoal
	// rawPeer names the raw side when it is not raw NATS, for the
	// targets that name it.
	rawPeer string
	// roundTrip, when set, is a raw NATS round trip measured at 1 in
	// flight in the same rounds, the unit of metricP50Excess.
	roundTrip benchCall
	// rawTimed and toolmeshTimed, when set, replace raw and toolmesh by
	// calls that say themselves how long they took (a cold start that
	// counts until the tool list, not the process's exit).
	rawTimed, toolmeshTimed timedCall
	// minCalls is how many calls each of the row's goroutines makes in a
	// round at least, however long they take (1 when 0): a round of
	// calls longer than its share of --duration still measures several.
	minCalls int
}

// timedCall is a call that measures itself.
type timedCall func(b *bencher, ctx context.Context) (time.Duration, error)

// timed measures a benchCall from the outside.
func timed(call benchCall) timedCall {
	return func(b *bencher, ctx context.Context) (time.Duration, error) {
		t0 := time.Now()
		err := call(b, ctx)
		return time.Since(t0), err
	}
}

// pick is the timed call when there is one, else the plain one, timed.
func pick(t timedCall, call benchCall) timedCall {
	if t != nil {
		return t
	}
	return timed(call)
}

// versusCall is one peer's side of a scenario.
type versusCall struct {
	peer, what string
	call       benchCall
}

const (
	peersRequestReply = "raw: nats.go request/reply; micro: a nats.go micro endpoint, same echo"
	peersStream       = "raw: publish→subscribe, one message per event"
	peersNoResponders = "raw: nats.go request to a subject nobody subscribes"
	peersSpawn        = "raw: os/exec of the same program"
	peersSandbox      = "raw: the same CLI tool through the mesh without a sandbox"
)

// benchScenarios is the table of the run's ratio rows, in report order.
func benchScenarios(o *benchOptions, sandboxed, durable, durableR3 bool) []benchScenario {
	var s []benchScenario
	for _, n := range o.levels {
		s = append(s, benchScenario{name: "unary", inFlight: n, peers: peersRequestReply,
			raw: (*bencher).rawUnary, micro: (*bencher).microUnary,
			toolmesh: func(b *bencher, ctx context.Context) error { return b.meshUnary(ctx) },
			versus:   unaryVersus(), goals: destructiveGoals(n)})
	}
	for _, n := range o.levels {
		// The same echo declared idempotent and read-only, called as such:
		// its worker starts it without the pickup confirmation that the
		// unary row's (destructive by default) pays for (protocol §8.2).
		s = append(s, benchScenario{name: "unary, idempotent", inFlight: n, peers: peersRequestReply,
			raw: (*bencher).rawUnary, micro: (*bencher).microUnary, toolmesh: (*bencher).meshUnaryIdempotent,
			versus: []versusCall{grpcUnaryVersus}, goals: idempotentGoals(n)})
	}
	if n := slices.Max(o.levels); n > 1 {
		// At the highest level, the mesh with coalescing off: calls never
		// travel together, so this is the per-call cost alone, with a floor
		// of its own at 256 in flight.
		var goals []benchGoal
		if n == 256 {
			goals = []benchGoal{{metric: metricThroughput, bound: 0.8}}
		}
		s = append(s, benchScenario{name: "unary, coalescing off", inFlight: n, peers: peersRequestReply,
			raw: (*bencher).rawUnary, micro: (*bencher).microUnary, toolmesh: (*bencher).meshUnaryAlone, goals: goals})
	}
	s = append(s,
		benchScenario{name: fmt.Sprintf("stream of %d deltas", o.deltas), inFlight: 1, peers: peersStream,
			raw: (*bencher).rawStream, toolmesh: (*bencher).meshStream, versus: streamVersus(),
			goals: []benchGoal{{metric: metricThroughput, bound: 1.0}}},
		benchScenario{name: "no responders", inFlight: 1, peers: peersNoResponders,
			raw: (*bencher).rawNoResponders, toolmesh: (*bencher).meshNoResponders,
			goals: []benchGoal{{metric: metricP50, atMost: true, bound: 1.3}}})
	if durable {
		s = append(s, durableScenarios(o.levels)...)
	}
	if durableR3 {
		s = append(s, durableR3Scenarios(o.levels)...)
	}
	s = append(s, gatewayScenarios(o.gatewayLevels, o.coldTools)...)
	s = append(s, fleetScenarios(o)...)
	for _, mib := range o.bigLevels {
		s = append(s, bigScenario(mib))
	}
	for _, n := range o.cliLevels {
		s = append(s, benchScenario{name: "cli " + trueBinaryName, inFlight: n, peers: peersSpawn,
			raw: (*bencher).rawSpawn, toolmesh: (*bencher).meshSpawn,
			goals: []benchGoal{{metric: metricThroughput, bound: 0.85}}})
	}
	for _, n := range o.cliLevels {
		if !sandboxed {
			break
		}
		s = append(s, benchScenario{name: "cli " + trueBinaryName + " sandboxed", inFlight: n, peers: peersSandbox,
			raw: (*bencher).meshSpawn, toolmesh: (*bencher).meshSpawnSandboxed, versus: sandboxedVersus(), goals: sandboxedGoals()})
	}
	return s
}

// durableScenarios are the durable rows, one per level in flight: a
// durable unary call against the same guarantees written by hand (raw),
// the bare work queue beside them. Durable calls are worth their keeping
// when they run at ≥ 0.8× the hand-written queue's rate at the highest
// level, and within 1.5× its median latency at 1 in flight.
func durableScenarios(levels []int) []benchScenario {
	var s []benchScenario
	for _, n := range levels {
		var goals []benchGoal
		switch {
		case n == 1:
			goals = []benchGoal{{metric: metricP50, atMost: true, bound: 1.5}}
		case n == slices.Max(levels):
			goals = []benchGoal{{metric: metricThroughput, bound: 0.8}}
		}
		s = append(s, benchScenario{name: durableRowName, inFlight: n, peers: peersEquivalentQueue,
			raw: (*bencher).equivalentQueueCall, toolmesh: (*bencher).durableUnary,
			versus: []versusCall{{peerBareQueue, bareQueueWhat, (*bencher).rawWorkQueue}}, goals: goals})
	}
	return s
}

// durableR3Scenarios are the durable rows on a 3-node cluster, every
// stream replicated three times on each side: shown beside the
// single-server rows, with no target of their own.
func durableR3Scenarios(levels []int) []benchScenario {
	var s []benchScenario
	for _, n := range levels {
		s = append(s, benchScenario{name: durableRowName + durableR3Suffix, inFlight: n, peers: peersEquivalentQueue,
			raw: (*bencher).equivalentQueueCallR3, toolmesh: (*bencher).durableUnaryR3,
			versus: []versusCall{{peerBareQueue, bareQueueWhat, (*bencher).rawWorkQueueR3}}})
	}
	return s
}

// unaryVersus are the unary row's peers beside raw and micro: the floor
// of its pickup confirmation (micro+confirm), and what users would pick
// instead.
func unaryVersus() []versusCall {
	return []versusCall{
		{peerMicroConfirm, "a nats.go micro endpoint that, before each reply, sends the requester a heartbeat-sized message and waits for the server's PONG, as the pickup confirmation does", (*bencher).microConfirmUnary},
		{peerMCPHTTP, "MCP go-sdk, streamable HTTP " + mcpSessionRevision + " (a session)", (*bencher).mcpUnary},
		{peerMCPStateles, "MCP go-sdk, streamable HTTP " + mcpStatelessRevision + " (stateless)", (*bencher).mcpStatelessUnary},
		grpcUnaryVersus,
	}
}

// grpcUnaryVersus is gRPC's side of a unary row.
var grpcUnaryVersus = versusCall{peerGRPC, "grpc-go unary, JSON codec", (*bencher).grpcUnary}

// streamVersus are the stream row's peers beside raw.
func streamVersus() []versusCall {
	return []versusCall{
		{peerMCPHTTP, "MCP go-sdk progress notifications, streamable HTTP " + mcpSessionRevision, (*bencher).mcpStream},
		{peerMCPStateles, "MCP go-sdk progress notifications, streamable HTTP " + mcpStatelessRevision, (*bencher).mcpStatelessStream},
		{peerGRPC, "grpc-go server streaming, JSON codec", (*bencher).grpcStream},
	}
}

// trueBinaryName names the CLI row's program in the report.
const trueBinaryName = "/bin/true"

// destructiveGoals are the targets of a call that keeps the pickup
// confirmation, against the nats.go micro endpoint: p50 at 1 in flight,
// throughput at 16 and at 256.
func destructiveGoals(inFlight int) []benchGoal {
	return microGoals(inFlight, 1.6, 0.75, 0.85)
}

// idempotentGoals are the targets of an idempotent call, which skips the
// confirmation, against the nats.go micro endpoint.
func idempotentGoals(inFlight int) []benchGoal {
	return microGoals(inFlight, 1.25, 0.9, 1.0)
}

// microGoals bound p50 over micro at 1 in flight and throughput over
// micro at 16 and at 256 in flight.
func microGoals(inFlight int, p50At1, tpAt16, tpAt256 float64) []benchGoal {
	switch inFlight {
	case 1:
		return []benchGoal{{metric: metricP50, peer: peerMicro, atMost: true, bound: p50At1}}
	case 16:
		return []benchGoal{{metric: metricThroughput, peer: peerMicro, bound: tpAt16}}
	case 256:
		return []benchGoal{{metric: metricThroughput, peer: peerMicro, bound: tpAt256}}
	}
	return nil
}

// run measures a scenario's sides in rounds, the order rotating each
// round so that each side goes first as often as the others and drift on a busy machine falls on all
// alike, and computes the per-round ratios' medians and spreads.
func (b *bencher) run(ctx context.Context, s benchScenario, o *benchOptions) benchResult {
	r := benchResult{Scenario: s.name, InFlight: s.inFlight, Peers: s.peers, RawPeer: s.rawPeer}
	type side struct {
		into     *benchSide
		call     timedCall
		inFlight int
	}
	sides := []side{{&r.Raw, pick(s.rawTimed, s.raw), s.inFlight}, {&r.Toolmesh, pick(s.toolmeshTimed, s.toolmesh), s.inFlight}}
	if s.micro != nil {
		r.Micro = &benchSide{}
		sides = append(sides, side{r.Micro, timed(s.micro), s.inFlight})
	}
	if s.roundTrip != nil {
		r.RoundTrip = &benchSide{}
		sides = append(sides, side{r.RoundTrip, timed(s.roundTrip), 1})
	}
	others := make([]benchSide, len(s.versus))
	for i, v := range s.versus {
		sides = append(sides, side{&others[i], timed(v.call), s.inFlight})
	}
	slice := max(o.duration/time.Duration(o.rounds), time.Millisecond)
	for round := range o.rounds {
		for i := range sides {
			x := sides[(i+round)%len(sides)]
			x.into.rounds = append(x.into.rounds, measure(ctx, b, x.into, x.inFlight, max(s.minCalls, 1), slice, x.call))
		}
	}
	for _, x := range sides {
		x.into.finish()
	}
	r.benchRatios = ratiosOver(&r.Toolmesh, &r.Raw)
	if r.Micro != nil {
		vsMicro, microVsRaw := ratiosOver(&r.Toolmesh, r.Micro), ratiosOver(r.Micro, &r.Raw)
		r.ToolmeshVsMicro, r.MicroVsRaw = &vsMicro, &microVsRaw
	}
	if r.RoundTrip != nil {
		excess, spread := excessOver(&r.Toolmesh, &r.Raw, r.RoundTrip)
		r.P50Excess, r.P50ExcessSpread = excess, &spread
	}
	r.versus(s, others)
	r.judge(s.goals)
	return r
}

// measure keeps inFlight calls going for d, each goroutine making at
// least minCalls, adds what happened to s and returns this round's figures.
func measure(ctx context.Context, b *bencher, s *benchSide, inFlight, minCalls int, d time.Duration, call timedCall) benchRound {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var round []time.Duration
	start := time.Now()
	stop := start.Add(d)
	for range inFlight {
		wg.Go(func() {
			var lat []time.Duration
			var errs int
			var firstErr error
			// At least minCalls each, however late the goroutine starts.
			for n := 0; n < minCalls || time.Now().Before(stop) && ctx.Err() == nil; n++ {
				took, err := call(b, ctx)
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				lat = append(lat, took)
			}
			mu.Lock()
			round = append(round, lat...)
			s.Errors += errs
			if firstErr != nil && s.FirstError == "" {
				s.FirstError = firstErr.Error()
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	s.elapsed += elapsed
	s.lat = append(s.lat, round...)
	slices.Sort(round)
	return benchRound{callsPerSec: float64(len(round)) / elapsed.Seconds(), p50: quantile(round, 0.5)}
}
