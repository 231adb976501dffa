package fleet

import (
	"sort"
	"time"
)

// Summary is what a fleet view shows, from one sample and optionally
// the one before it: totals since each worker started, and rates and
// window percentiles over the interval between the two samples.
type Summary struct {
	At time.Time `json:"at"`
	// IntervalSeconds is the time between the two samples (0 with one).
	IntervalSeconds float64         `json:"interval_seconds"`
	Workers         []WorkerSummary `json:"workers"`
	Tools           []ToolSummary   `json:"tools"`
	ErrorsByCode    []CodeSummary   `json:"errors_by_code"`
	// Complete is false when a worker answered PING but not STATS, or a
	// tool was left out of this identity's view undecided; Notes say why.
	Complete bool     `json:"complete"`
	Notes    []string `json:"notes,omitempty"`
}

// ToolSummary is one tool across every worker hosting it.
type ToolSummary struct {
	Name         string  `json:"name"`
	Instances    int     `json:"instances"`
	InFlight     int64   `json:"in_flight"`
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	CallsPerSec  float64 `json:"calls_per_sec"`
	ErrorsPerSec float64 `json:"errors_per_sec"`
	// P50Ms and P99Ms are since the workers started; the Window ones cover
	// the interval (0 when no call finished in it).
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	WindowP50Ms float64 `json:"window_p50_ms"`
	WindowP99Ms float64 `json:"window_p99_ms"`
	// Latency is the sum of the workers' histograms, for other quantiles.
	Latency Histogram `json:"latency"`
}

// WorkerSummary is one worker's totals.
type WorkerSummary struct {
	ID          string    `json:"id"`
	Started     time.Time `json:"started"`
	Tools       int       `json:"tools"`
	InFlight    int64     `json:"in_flight"`
	Requests    int64     `json:"requests"`
	Errors      int64     `json:"errors"`
	CallsPerSec float64   `json:"calls_per_sec"`
}

// CodeSummary counts one error code across the fleet.
type CodeSummary struct {
	Code   string  `json:"code"`
	Total  int64   `json:"total"`
	PerSec float64 `json:"per_sec"`
}

// Summarize folds a sample (and the previous one, nil for none) into a
// summary. Rates count only workers present in both samples, so a worker
// that just appeared does not spike them.
func Summarize(prev *Sample, cur Sample) Summary {
	z := summarizer{before: map[string]map[string]ToolSample{}, tools: map[string]*ToolSummary{},
		windows: map[string]Histogram{}, codes: map[string]*CodeSummary{}}
	sum := Summary{At: cur.At, Complete: cur.Complete, Notes: cur.Notes, Workers: []WorkerSummary{}, Tools: []ToolSummary{}, ErrorsByCode: []CodeSummary{}}
	if prev != nil {
		sum.IntervalSeconds = cur.At.Sub(prev.At).Seconds()
		for _, w := range prev.Workers {
			z.before[w.ID] = map[string]ToolSample{}
			for _, t := range w.Tools {
				z.before[w.ID][t.Name] = t
			}
		}
	}
	z.interval = sum.IntervalSeconds
	for _, w := range cur.Workers {
		sum.Workers = append(sum.Workers, z.worker(w))
	}
	for name, ts := range z.tools {
		ts.P50Ms, ts.P99Ms = ms(ts.Latency.Quantile(0.5)), ms(ts.Latency.Quantile(0.99))
		win := z.windows[name]
		ts.WindowP50Ms, ts.WindowP99Ms = ms(win.Quantile(0.5)), ms(win.Quantile(0.99))
		sum.Tools = append(sum.Tools, *ts)
	}
	sort.Slice(sum.Tools, func(i, j int) bool { return sum.Tools[i].Name < sum.Tools[j].Name })
	for _, cs := range z.codes {
		sum.ErrorsByCode = append(sum.ErrorsByCode, *cs)
	}
	sort.Slice(sum.ErrorsByCode, func(i, j int) bool { return sum.ErrorsByCode[i].Code < sum.ErrorsByCode[j].Code })
	return sum
}

// summarizer accumulates one summary.
type summarizer struct {
	interval float64
	before   map[string]map[string]ToolSample // worker id → tool → previous sample
	tools    map[string]*ToolSummary
	windows  map[string]Histogram // tool → latencies within the interval
	codes    map[string]*CodeSummary
}

func (z *summarizer) rate(n int64) float64 {
	if z.interval <= 0 {
		return 0
	}
	return float64(n) / z.interval
}

// worker folds one worker's tools into the totals and returns its row.
func (z *summarizer) worker(w WorkerSample) WorkerSummary {
	ws := WorkerSummary{ID: w.ID, Started: w.Started, Tools: len(w.Tools)}
	old, seen := z.before[w.ID]
	for _, t := range w.Tools {
		ts := z.tools[t.Name]
		if ts == nil {
			ts = &ToolSummary{Name: t.Name}
			z.tools[t.Name] = ts
		}
		ts.Instances++
		ts.InFlight += t.InFlight
		ts.Requests += t.Requests
		ts.Errors += t.Errors
		ts.Latency, _ = ts.Latency.Add(t.Latency)
		ws.InFlight += t.InFlight
		ws.Requests += t.Requests
		ws.Errors += t.Errors
		o := old[t.Name]
		if seen {
			ts.CallsPerSec += z.rate(t.Requests - o.Requests)
			ts.ErrorsPerSec += z.rate(t.Errors - o.Errors)
			ws.CallsPerSec += z.rate(t.Requests - o.Requests)
			z.windows[t.Name], _ = z.windows[t.Name].Add(t.Latency.Sub(o.Latency))
		}
		z.countCodes(t, o, seen)
	}
	return ws
}

func (z *summarizer) countCodes(t, o ToolSample, seen bool) {
	for code, n := range t.ErrorsByCode {
		cs := z.codes[code]
		if cs == nil {
			cs = &CodeSummary{Code: code}
			z.codes[code] = cs
		}
		cs.Total += n
		if seen {
			cs.PerSec += z.rate(n - o.ErrorsByCode[code])
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
