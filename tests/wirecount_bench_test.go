package tests

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// processCounts are the process's own counters that say what a call costs
// beyond its wall time: CPU (user and system) and read and write system
// calls, from getrusage and /proc/self/io.
type processCounts struct {
	cpu             time.Duration
	reads, writes   int64
	syscallsCounted bool
}

func readProcessCounts() processCounts {
	var pc processCounts
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		pc.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return pc
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, value, ok := bytes.Cut(sc.Bytes(), []byte(": "))
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(string(value), 10, 64)
		switch string(name) {
		case "syscr":
			pc.reads, pc.syscallsCounted = n, true
		case "syscw":
			pc.writes = n
		}
	}
	return pc
}

// BenchmarkUnary256Wire counts, at 256 calls in flight, what each side
// costs per call besides time: messages and bytes through the server (its
// varz counters), read and write system calls and CPU of the whole
// process (server, callers and responders alike live in it). Whether
// toolmesh's gap to micro is messages and wake-ups or CPU, these
// metrics answer in any run (docs/performance.md).
func BenchmarkUnary256Wire(b *testing.B) {
	m := newBenchMesh(b)
	ctx := context.Background()
	sides := []struct {
		name string
		call func() error
	}{
		{"raw", func() error { _, err := m.raw.Request("raw.echo", benchArgs, 30*time.Second); return err }},
		{"micro", func() error { _, err := m.raw.Request("micro.echo", benchArgs, 30*time.Second); return err }},
		{"toolmesh", func() error { _, err := m.c.Call(ctx, "echo", benchArgs); return err }},
	}
	for _, s := range sides {
		b.Run(s.name, func(b *testing.B) {
			v0, err := m.srv.Server.Varz(nil)
			if err != nil {
				b.Fatal(err)
			}
			p0 := readProcessCounts()
			runInFlight(b, 256, s.call)
			p1 := readProcessCounts()
			v1, err := m.srv.Server.Varz(nil)
			if err != nil {
				b.Fatal(err)
			}
			per := func(d int64) float64 { return float64(d) / float64(b.N) }
			b.ReportMetric(per(v1.InMsgs-v0.InMsgs), "msgs-in/op")
			b.ReportMetric(per(v1.OutMsgs-v0.OutMsgs), "msgs-out/op")
			b.ReportMetric(per(v1.InBytes-v0.InBytes), "bytes-in/op")
			b.ReportMetric(per(int64(p1.cpu-p0.cpu))/1e3, "cpu-µs/op")
			if p0.syscallsCounted {
				b.ReportMetric(per(p1.reads-p0.reads), "syscr/op")
				b.ReportMetric(per(p1.writes-p0.writes), "syscw/op")
			}
		})
	}
}
