package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// RunInfo says where and when a run was made, for the performance page.
type RunInfo struct {
	// Date, Machine and Load are printed as given (e.g. `date -u`,
	// `nproc` and the CPU model, `uptime`'s load averages before and after).
	Date, Machine, Load string
}

// Markdown renders the JSON report of one `toolmesh bench --json` run as
// the performance page's tables: each row beside its peers with its
// target and whether the run met it, then the memory and flood rows. The
// page is generated from a run, so its figures are one run's, never a
// collage of several.
func Markdown(report io.Reader, info RunInfo) (string, error) {
	var r benchReport
	if err := json.NewDecoder(report).Decode(&r); err != nil {
		return "", fmt.Errorf("bench report: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "One run of `toolmesh bench` on %s, %s; load %s. Server: %s; %s per side and row, %d interleaved rounds.\n\n",
		info.Machine, info.Date, info.Load, r.Server, r.Duration, r.Rounds)
	b.WriteString("| row | in flight | peer | toolmesh/s | peer/s | throughput ratio | p50 ratio | target | met |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Results {
		if x.Memory == nil {
			writeRatioRows(&b, x)
		}
	}
	b.WriteString("\nRatios are toolmesh over the peer, medians over rounds [lowest–highest round]: throughput 1.00 = as many calls per second, p50 1.00 = as fast. The target, on the row's first line, names the peer it is over (none: the first); a p50 target in NATS round trips is the peer's p50 plus that many raw round trips measured in the same rounds.\n")
	for _, x := range r.Results {
		if x.RoundTrip != nil && x.P50ExcessSpread != nil {
			fmt.Fprintf(&b, "\n%s at %d in flight: p50 %.0f µs through toolmesh, %.0f µs from %s, one raw NATS round trip %.0f µs in the same rounds: %s round trips more.\n",
				x.Scenario, x.InFlight, x.Toolmesh.P50Micros, x.Raw.P50Micros, rawName(x), x.RoundTrip.P50Micros, spread(x.P50Excess, *x.P50ExcessSpread))
		}
	}
	for _, x := range r.Results {
		if text := confirmFloorText(x); text != "" {
			fmt.Fprintf(&b, "\n%s\n", text)
		}
	}
	for _, x := range r.Results {
		if x.Memory != nil {
			writeMemory(&b, x)
		}
	}
	writeFlood(&b, r.Flood)
	return b.String(), nil
}

// writeRatioRows writes one report row: a line for its first peer with
// the target, then a line for each further peer.
func writeRatioRows(b *strings.Builder, x benchResult) {
	peers := x.Versus
	if len(peers) == 0 {
		peers = []benchVersus{{Peer: rawName(x), What: x.Peers, benchSide: x.Raw, ToolmeshOver: x.benchRatios}}
	}
	for i, v := range peers {
		target, met := "", ""
		if i == 0 {
			target, met = targetText(x), metText(x)
		}
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %.0f | %s | %s | %s | %s |\n", x.Scenario, x.InFlight, v.Peer,
			x.Toolmesh.CallsPerSec, v.CallsPerSec, spread(v.ToolmeshOver.ThroughputRatio, v.ToolmeshOver.ThroughputSpread),
			spread(v.ToolmeshOver.P50Ratio, v.ToolmeshOver.P50Spread), target, met)
	}
}

// writeMemory writes the memory row's figures.
func writeMemory(b *strings.Builder, x benchResult) {
	m := x.Memory
	fmt.Fprintf(b, "\nMemory, %d calls held in flight at once (worker and caller each in a process of their own): caller heap %.0f B per call (raw %.0f B), worker heap and stack %.0f B per blocked call (raw %.0f B); target %s, met: %s.\n",
		m.Calls, m.Toolmesh.CallerHeapPerCall, m.Raw.CallerHeapPerCall, m.Toolmesh.WorkerBytesPerCall, m.Raw.WorkerBytesPerCall, targetText(x), metText(x))
}

// writeFlood writes the flood row: each side's calls by outcome.
func writeFlood(b *strings.Builder, flood []floodCounts) {
	if len(flood) == 0 {
		return
	}
	out, _ := json.Marshal(flood)
	fmt.Fprintf(b, "\nFlood, calls by outcome on each side: `%s`\n", out)
}
