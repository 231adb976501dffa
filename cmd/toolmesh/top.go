package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/ctxsleep"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/redact"
)

func newTopCmd(g *globals) *cobra.Command {
	var (
		interval, wait time.Duration
		asJSON         bool
	)
	cmd := usage.Command("top", "A live view of the fleet: workers, tools, calls in flight, calls/s, errors by code, p50/p99 latency",
		func(cmd *cobra.Command) error {
			if interval <= 0 {
				return usage.FlagValueProblem("interval", interval.String(), "a positive duration such as 1s")
			}
			c, done, err := g.newCaller(cmd, "top")
			if err != nil {
				return err
			}
			defer done()
			t := topView{g: g, c: c, interval: interval, wait: wait}
			if asJSON {
				return t.once(cmd.Context())
			}
			return t.live(cmd.Context())
		})
	cmd.Long = `A live view of the mesh, refreshed every --interval from the workers' $SRV.STATS answers
(the ADR-32 subject stock NATS tooling reads). Plain text and ANSI clear-screen only, so it
works over ssh. Rates and the P50/P99 columns cover the last interval; totals are since
each worker started. With --json it takes two samples --interval apart and prints one
summary (totals from the second sample) for scripts. Ctrl-C quits.`
	f := cmd.Flags()
	f.DurationVar(&interval, "interval", time.Second, "how often to refresh (and, with --json, the gap between the two samples)")
	f.DurationVar(&wait, "wait", 500*time.Millisecond, "how long to wait for the workers' answers in each sample")
	f.BoolVar(&asJSON, "json", false, "print one summary as JSON and exit")
	return cmd
}

// topView samples the fleet and renders it.
type topView struct {
	g        *globals
	c        *caller.Caller
	interval time.Duration
	wait     time.Duration
}

func (t topView) sample(ctx context.Context) (fleet.Sample, error) {
	s, err := t.c.Catalog().SampleFleet(ctx, t.wait)
	if err != nil {
		return s, envelope.AsProblem(err, envelope.CodeConnectionLost)
	}
	return s, nil
}

// once prints the summary of two samples an interval apart.
func (t topView) once(ctx context.Context) error {
	first, err := t.sample(ctx)
	if err != nil {
		return err
	}
	if ctxsleep.Sleep(ctx, t.interval) != nil {
		return envelope.NewProblem(envelope.CodeCancelled, "interrupted before the second sample")
	}
	second, err := t.sample(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(fleet.Summarize(&first, second))
	if err != nil {
		return envelope.NewProblem(envelope.CodeInternal, err.Error())
	}
	fmt.Fprintf(t.g.stdout, "%s\n", b)
	return nil
}

// live redraws the view every interval until ctx ends.
func (t topView) live(ctx context.Context) error {
	var prev *fleet.Sample
	tty := isTerminal(t.g.stdout)
	for {
		cur, err := t.sample(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		frame := t.render(fleet.Summarize(prev, cur), prev == nil)
		if tty {
			frame = "\x1b[H\x1b[2J" + clip(frame, termWidth(t.g.stdout))
		} else {
			frame += "\n"
		}
		if _, err := io.WriteString(t.g.stdout, frame); err != nil {
			return nil // the terminal went away
		}
		prev = &cur
		if ctxsleep.Sleep(ctx, t.interval) != nil {
			return nil
		}
	}
}

// render lays out one frame: a header, then tools, errors by code and workers.
func (t topView) render(s fleet.Summary, first bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolmesh top  %s  prefix %s  %d workers  %d tools  %s  every %s  (Ctrl-C quits)\n",
		redactURLs(t.g.connect.URLOrDefault()), t.g.prefix, len(s.Workers), len(s.Tools), s.At.Format("15:04:05"), t.interval)
	for _, n := range s.Notes {
		b.WriteString("warning: " + n + "\n")
	}
	if first {
		b.WriteString("(rates and latency appear from the second sample)\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tINST\tIN FLIGHT\tCALLS/S\tERR/S\tP50\tP99\tTOTAL\tERRORS")
	for _, x := range s.Tools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%s\t%s\t%d\t%d\n", x.Name, x.Instances, x.InFlight, x.CallsPerSec, x.ErrorsPerSec,
			msText(x.WindowP50Ms), msText(x.WindowP99Ms), x.Requests, x.Errors)
	}
	_ = tw.Flush()
	if len(s.ErrorsByCode) > 0 {
		b.WriteString("\n")
		fmt.Fprintln(tw, "ERROR CODE\tPER S\tTOTAL")
		for _, c := range s.ErrorsByCode {
			fmt.Fprintf(tw, "%s\t%.1f\t%d\n", c.Code, c.PerSec, c.Total)
		}
		_ = tw.Flush()
	}
	b.WriteString("\n")
	fmt.Fprintln(tw, "WORKER\tTOOLS\tIN FLIGHT\tCALLS/S\tTOTAL\tERRORS\tUP")
	for _, w := range s.Workers {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%d\t%d\t%s\n", w.ID, w.Tools, w.InFlight, w.CallsPerSec, w.Requests, w.Errors,
			s.At.Sub(w.Started).Truncate(time.Second))
	}
	_ = tw.Flush()
	return b.String()
}

func msText(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2fs", v/1000)
}

func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 0
}

// clip cuts each line to width runes so a narrow terminal (or an ssh
// window) does not wrap the table; width 0 means no limit.
func clip(frame string, width int) string {
	if width <= 0 {
		return frame
	}
	lines := strings.Split(frame, "\n")
	for i, l := range lines {
		if r := []rune(l); len(r) > width {
			lines[i] = string(r[:width])
		}
	}
	return strings.Join(lines, "\r\n")
}

// redactURLs hides the password of each comma-separated URL: a view that
// may be shared on a screen must not show nats://user:secret@host. It is
// redact.ServerURLs, which works on the text (a parsed URL would let a
// password holding '#', '/' or '?' through), keeping the list's spacing.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		url := strings.TrimLeft(p, " ")
		parts[i] = p[:len(p)-len(url)] + redact.ServerURLs(url)
	}
	return strings.Join(parts, ",")
}
