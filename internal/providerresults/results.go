package providerresults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
)

// Accumulator gathers a call's events into its Outcome, for providers
// that have no streamed tool results: deltas are kept and folded into the
// result when the terminal event carries none.
type Accumulator struct {
	deltas   []json.RawMessage
	terminal *envelope.ToolEvent
}

// Add takes one event; events after the terminal one are ignored.
func (a *Accumulator) Add(ev envelope.ToolEvent) {
	if a.terminal != nil {
		return
	}
	switch {
	case ev.Type == envelope.EventDelta:
		a.deltas = append(a.deltas, ev.Data)
	case ev.IsTerminal():
		a.terminal = &ev
	}
}

// Outcome returns what was gathered. Without a terminal event the outcome
// is a missing_terminal Problem, never a false success.
func (a *Accumulator) Outcome() provider.Outcome {
	switch {
	case a.terminal == nil:
		return provider.Outcome{Problem: envelope.NewProblem(envelope.CodeMissingTerminal, "the call ended without a result or an error"), Deltas: a.deltas}
	case a.terminal.Type == envelope.EventError:
		return provider.Outcome{Problem: a.terminal.Problem(), Deltas: a.deltas}
	}
	data := a.terminal.Data
	if isEmptyData(data) && len(a.deltas) > 0 {
		return provider.Outcome{Data: joinArray(a.deltas)}
	}
	return provider.Outcome{Data: data}
}

func isEmptyData(b json.RawMessage) bool {
	t := bytes.TrimSpace(b)
	return len(t) == 0 || string(t) == "null"
}

func joinArray(items []json.RawMessage) json.RawMessage {
	out := json.RawMessage{'['}
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// problemText renders a Problem as the few lines a model needs to act on
// it — code, detail, whether and when to retry, the suggested fix — and
// nothing else, since every token is paid for.
func problemText(p *envelope.Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "error %s: %s", p.Code, p.Error())
	if p.RetryAfter != nil {
		b.WriteString("\nretry: after " + strconv.FormatFloat(*p.RetryAfter, 'f', -1, 64) + "s")
	} else {
		b.WriteString("\nretry: no (not transient)")
	}
	if f := p.SuggestedFix; f != nil && f.Description != "" {
		b.WriteString("\nfix: " + f.Description)
	}
	return b.String()
}

// text is the outcome as the text a model reads: a string result as
// itself, any other result as compact JSON, a Problem as problemText
// followed by the output streamed before it failed.
func text(o provider.Outcome) string {
	if o.Problem != nil {
		t := problemText(o.Problem)
		if len(o.Deltas) > 0 {
			t += "\npartial output: " + compact(joinArray(o.Deltas))
		}
		return t
	}
	if isEmptyData(o.Data) {
		return "null"
	}
	var s string
	if o.Data[0] == '"' && json.Unmarshal(o.Data, &s) == nil {
		return s
	}
	return compact(o.Data)
}

func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}
