package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

func printBench(env *Env, r benchReport, asJSON bool) {
	if asJSON {
		out, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(env.Stdout, string(out))
		return
	}
	fmt.Fprintf(env.Stdout, "server: %s, %s per side and scenario in %d rounds, the sides' order rotating each round\n\n", r.Server, r.Duration, r.Rounds)
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tIN FLIGHT\tRAW/S\tMICRO/S\tTOOLMESH/S\tTOOLMESH/RAW\tMICRO/RAW\tTOOLMESH/MICRO\tRAW P50\tTOOLMESH P50\tP50 RATIO\tTARGET\tMET")
	var memory []benchResult
	for _, x := range r.Results {
		if x.Memory != nil {
			memory = append(memory, x)
			continue
		}
		microRate, microRaw, meshMicro := "-", "-", "-"
		if x.Micro != nil {
			microRate = fmt.Sprintf("%.0f", x.Micro.CallsPerSec)
			microRaw, meshMicro = fmt.Sprintf("%.2f", x.MicroVsRaw.ThroughputRatio), fmt.Sprintf("%.2f", x.ToolmeshVsMicro.ThroughputRatio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%.0f\t%s\t%s\t%s\t%.0fµs\t%.0fµs\t%s\t%s\t%s\n", x.Scenario, x.InFlight,
			x.Raw.CallsPerSec, microRate, x.Toolmesh.CallsPerSec, spread(x.ThroughputRatio, x.ThroughputSpread),
			microRaw, meshMicro, x.Raw.P50Micros, x.Toolmesh.P50Micros, spread(x.P50Ratio, x.P50Spread), targetText(x), metText(x))
	}
	_ = tw.Flush()
	fmt.Fprintln(env.Stdout, "\nratios are medians over rounds [lowest–highest round]: throughput 1.00 = as many calls per second, p50 1.00 = as fast.")
	printRoundTrips(env.Stdout, r.Results)
	for _, x := range r.Results {
		if text := confirmFloorText(x); text != "" {
			fmt.Fprintln(env.Stdout, text)
		}
	}
	printVersus(env.Stdout, r.Results)
	for _, x := range memory {
		printMemory(env.Stdout, x)
	}
	printFlood(env, r.Flood)
}

// printRoundTrips prints, for the rows with a target counted in raw NATS
// round trips, how much longer toolmesh's p50 was than its peer's.
func printRoundTrips(out io.Writer, rows []benchResult) {
	for _, x := range rows {
		if x.RoundTrip == nil || x.P50ExcessSpread == nil {
			continue
		}
		fmt.Fprintf(out, "%s at %d: toolmesh p50 %.0fµs, %s p50 %.0fµs, one raw NATS round trip %.0fµs: toolmesh takes %s round trips more\n",
			x.Scenario, x.InFlight, x.Toolmesh.P50Micros, rawName(x), x.Raw.P50Micros, x.RoundTrip.P50Micros, spread(x.P50Excess, *x.P50ExcessSpread))
	}
}

// confirmFloorText is, for a row at 1 in flight measured beside
// micro+confirm, its p50 beside micro's and micro+confirm's, and the floor
// micro+confirm sets beside the row's target: what no implementation of
// the pickup confirmation can beat. "" for any other row.
func confirmFloorText(x benchResult) string {
	i := slices.IndexFunc(x.Versus, func(v benchVersus) bool { return v.Peer == peerMicroConfirm })
	if x.InFlight != 1 || i < 0 || x.MicroConfirmOverMicro == nil || x.Micro == nil || x.ToolmeshVsMicro == nil {
		return ""
	}
	floor, mesh := x.MicroConfirmOverMicro, x.ToolmeshVsMicro
	return fmt.Sprintf("%s at 1 in flight: p50 %.0f µs through toolmesh, %.0f µs from micro, %.0f µs from micro plus the confirmation's round trip (%s), in the same rounds. "+
		"Floor (%s over micro): p50 %s; toolmesh over micro: p50 %s; target: %s.",
		x.Scenario, x.Toolmesh.P50Micros, x.Micro.P50Micros, x.Versus[i].P50Micros, peerMicroConfirm,
		peerMicroConfirm, spread(floor.P50Ratio, floor.P50Spread), spread(mesh.P50Ratio, mesh.P50Spread), targetText(x))
}

// rawName is what the row calls its raw side.
func rawName(x benchResult) string {
	if x.RawPeer != "" {
		return x.RawPeer
	}
	return peerRaw
}

// printVersus prints toolmesh against every peer of the rows that have
// them, one line a peer.
func printVersus(out io.Writer, rows []benchResult) {
	if !slices.ContainsFunc(rows, func(x benchResult) bool { return len(x.Versus) > 0 }) {
		return
	}
	fmt.Fprintln(out, "\ntoolmesh against what users would pick instead, in the same rounds:")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tIN FLIGHT\tPEER\tPEER/S\tTOOLMESH/S\tTOOLMESH/PEER\tPEER P50\tTOOLMESH P50\tP50 TOOLMESH/PEER")
	for _, x := range rows {
		for _, v := range x.Versus {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%s\t%.0fµs\t%.0fµs\t%s\n", x.Scenario, x.InFlight, v.Peer,
				v.CallsPerSec, x.Toolmesh.CallsPerSec, spread(v.ToolmeshOver.ThroughputRatio, v.ToolmeshOver.ThroughputSpread),
				v.P50Micros, x.Toolmesh.P50Micros, spread(v.ToolmeshOver.P50Ratio, v.ToolmeshOver.P50Spread))
		}
	}
	_ = tw.Flush()
}

func spread(median float64, s [2]float64) string {
	return fmt.Sprintf("%.2f [%.2f–%.2f]", median, s[0], s[1])
}

// targetText is a row's targets in short: "throughput over micro ≥ 0.90".
func targetText(r benchResult) string {
	var parts []string
	for _, c := range r.Checks {
		op := "≥"
		if c.Op == "<=" {
			op = "≤"
		}
		if c.Metric == metricP50Excess {
			parts = append(parts, fmt.Sprintf("p50 %s %s p50 + %s NATS round trips", op, c.Peer, humanValue(c.Metric, c.Want)))
			continue
		}
		over := ""
		if c.Peer != "" {
			over = " over " + c.Peer
		}
		parts = append(parts, fmt.Sprintf("%s%s %s %s", checkName(c.Metric), over, op, humanValue(c.Metric, c.Want)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func checkName(m benchMetric) string {
	switch m {
	case metricThroughput:
		return "throughput"
	case metricP50:
		return "p50"
	case metricCallerHeap:
		return "caller heap/call"
	case metricWorkerMemory:
		return "worker/blocked call"
	case metricRSSAfter:
		return "RSS after/baseline"
	case metricP50Excess:
		return "p50"
	}
	return string(m)
}

func humanValue(m benchMetric, v float64) string {
	if m == metricCallerHeap || m == metricWorkerMemory {
		return bytesText(v)
	}
	return fmt.Sprintf("%.2f", v)
}

func metText(r benchResult) string {
	if r.Met == nil {
		return "-"
	}
	var missed []string
	for _, c := range r.Checks {
		if !c.Met {
			missed = append(missed, checkName(c.Metric))
		}
	}
	if len(missed) == 0 || len(missed) == len(r.Checks) {
		return yesNo(len(missed) == 0)
	}
	return "no: " + strings.Join(missed, ", ")
}

// printMemory prints the memory row as a small table of its own.
func printMemory(out io.Writer, x benchResult) {
	m := x.Memory
	fmt.Fprintf(out, "\n%s (%s)\n\n", x.Scenario, x.Peers)
	for i, s := range []benchSide{x.Raw, x.Toolmesh} {
		if s.Errors > 0 {
			fmt.Fprintf(out, "%s side failed, its figures are not shown: %d calls failed, first: %s\n\n", []string{"raw", "toolmesh"}[i], s.Errors, s.FirstError)
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tRAW\tTOOLMESH\tTOOLMESH/RAW\tTARGET\tMET")
	row := func(name string, raw, mesh, ratio string, metric benchMetric) {
		target, met := "-", "-"
		for _, c := range x.Checks {
			if c.Metric == metric {
				target, met = targetText(benchResult{Checks: []benchCheck{c}}), yesNo(c.Met)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, raw, mesh, ratio, target, met)
	}
	row("caller heap per call", bytesText(m.Raw.CallerHeapPerCall), bytesText(m.Toolmesh.CallerHeapPerCall), fmt.Sprintf("%.2f", m.CallerHeapRatio), metricCallerHeap)
	row("worker heap+stack per blocked call", bytesText(m.Raw.WorkerBytesPerCall), bytesText(m.Toolmesh.WorkerBytesPerCall), fmt.Sprintf("%.2f", m.WorkerBytesRatio), metricWorkerMemory)
	row("  of which stack", bytesText(m.Raw.WorkerStackPerCall), bytesText(m.Toolmesh.WorkerStackPerCall), "", "")
	row("worker RSS before → all blocked", rssText(m.Raw.RSSBaseline, m.Raw.RSSPeak), rssText(m.Toolmesh.RSSBaseline, m.Toolmesh.RSSPeak), "", "")
	row("worker RSS after, held by the runtime", mib(m.Raw.RSSAfterHeld), mib(m.Toolmesh.RSSAfterHeld), "", "")
	row("worker RSS after, freed to the OS / before", fmt.Sprintf("%s (%.2f)", mib(m.Raw.RSSAfter), m.Raw.RSSAfterRatio),
		fmt.Sprintf("%s (%.2f)", mib(m.Toolmesh.RSSAfter), m.Toolmesh.RSSAfterRatio), "", metricRSSAfter)
	row("worker goroutines before → after", fmt.Sprintf("%d → %d", m.Raw.GoroutinesBaseline, m.Raw.GoroutinesAfter),
		fmt.Sprintf("%d → %d", m.Toolmesh.GoroutinesBaseline, m.Toolmesh.GoroutinesAfter), "", "")
	row("time until every call was blocked", fmt.Sprintf("%.2fs", m.Raw.BurstSeconds), fmt.Sprintf("%.2fs", m.Toolmesh.BurstSeconds), "", "")
	_ = tw.Flush()
}

func bytesText(v float64) string {
	if v >= 1024 || v <= -1024 {
		return fmt.Sprintf("%.1f KiB", v/1024)
	}
	return fmt.Sprintf("%.0f B", v)
}

func mib(v int64) string { return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)) }

func rssText(before, peak int64) string { return mib(before) + " → " + mib(peak) }

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
