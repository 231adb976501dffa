package fleet

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	us := time.Microsecond
	cases := []struct {
		name     string
		observe  []time.Duration
		p50, p99 time.Duration
	}{
		{"empty", nil, 0, 0},
		{"one fast call: the max, not the bucket bound", []time.Duration{30 * us}, 30 * us, 30 * us},
		{"bucket bounds", []time.Duration{60 * us, 70 * us, 80 * us, 2 * time.Millisecond}, 100 * us, 2 * time.Millisecond},
		{"past the last bound: the max seen", []time.Duration{time.Millisecond, 90 * time.Second}, time.Millisecond, 90 * time.Second},
	}
	for _, c := range cases {
		h := NewHistogram()
		for _, d := range c.observe {
			h.Observe(d)
		}
		if got := h.Quantile(0.5); got != c.p50 {
			t.Errorf("%s: p50 %v, want %v", c.name, got, c.p50)
		}
		if got := h.Quantile(0.99); got != c.p99 {
			t.Errorf("%s: p99 %v, want %v", c.name, got, c.p99)
		}
	}
}

func TestHistogramAddSub(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	a.Observe(time.Millisecond)
	b.Observe(time.Second)
	b.Observe(time.Second)
	sum, ok := Histogram{}.Add(a)
	if !ok {
		t.Fatal("an empty histogram refused to add")
	}
	if sum, ok = sum.Add(b); !ok || sum.Total() != 3 || sum.MaxMicros != 1_000_000 {
		t.Fatalf("sum %+v ok %v", sum, ok)
	}
	if w := sum.Sub(a); w.Total() != 2 || w.Quantile(0.5) != time.Second {
		t.Errorf("window %+v", w)
	}
	other := Histogram{BoundsMicros: []int64{1}, Counts: []int64{1, 1}}
	if _, ok := sum.Add(other); ok {
		t.Error("histograms with other bounds were added")
	}
}

// FuzzHistogram reads any JSON as a histogram (what a hostile worker could
// send in $SRV.STATS): quantiles, sums and windows never panic.
func FuzzHistogram(f *testing.F) {
	good, _ := json.Marshal(NewHistogram())
	f.Add(good, 0.5)
	f.Add([]byte(`{"bounds_us":[1,2],"counts":[5]}`), 0.99)
	f.Add([]byte(`{"bounds_us":[2,1],"counts":[-5,3,9],"max_us":-1}`), 1.0)
	f.Fuzz(func(t *testing.T, data []byte, q float64) {
		var h Histogram
		if json.Unmarshal(data, &h) != nil {
			return
		}
		_ = h.Quantile(q)
		sum, _ := NewHistogram().Add(h)
		_ = sum.Sub(h).Quantile(q)
		h.Observe(time.Millisecond)
	})
}

// The load data a worker adds to $SRV.STATS is a wire shape other
// processes read: pinned by a golden file.
func TestToolLoadGolden(t *testing.T) {
	h := NewHistogram()
	h.Observe(80 * time.Microsecond)
	h.Observe(3 * time.Millisecond)
	got, err := json.Marshal(ToolLoad{InFlight: 2, ErrorsByCode: map[string]int64{"timeout": 1, "invalid_input": 4}, Latency: h})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/tool_load.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != strings.TrimSpace(string(want)) {
		t.Errorf("ToolLoad wire shape changed:\n got %s\nwant %s", got, want)
	}
	var back ToolLoad
	if err := json.Unmarshal(want, &back); err != nil || back.Latency.Total() != 2 || back.ErrorsByCode["invalid_input"] != 4 {
		t.Errorf("golden does not read back: %v %+v", err, back)
	}
}
