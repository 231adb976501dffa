package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
)

// answerOptions are the call options for answering a tool's questions
// (docs/protocol.md §23): on a terminal (stdin and stderr) a person
// answers a small form; else the --answer values answer the questions in
// order, and a question past them ends the call with input_required;
// with neither the call declares nothing and the worker answers
// input_required itself. The form pauses gate (the progress display)
// while it asks, so the display does not draw over the prompt.
func (g *globals) answerOptions(answers []string, gate *spinnerGate) ([]caller.Option, error) {
	given := make([]caller.Answer, 0, len(answers))
	for _, a := range answers {
		ans, err := parseAnswerFlag(a)
		if err != nil {
			return nil, err
		}
		given = append(given, ans)
	}
	stdin, ok := g.stdin.(*os.File)
	switch {
	case len(given) > 0:
		return []caller.Option{caller.OnQuestion(listAnswerer(given))}, nil
	case ok && isTerminal(stdin) && isTerminal(g.stderr):
		return []caller.Option{caller.OnQuestion(formAnswerer(stdin, g.stderr, gate))}, nil
	}
	return nil, nil
}

// parseAnswerFlag reads one --answer: a JSON object (accept with that
// content), or the word decline or cancel.
func parseAnswerFlag(s string) (caller.Answer, error) {
	switch strings.TrimSpace(s) {
	case envelope.ActionDecline:
		return caller.Decline(), nil
	case envelope.ActionCancel:
		return caller.Dismiss(), nil
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return caller.Answer{}, envelope.Problemf(envelope.CodeInvalidInput, "--answer %q: want a JSON object, decline or cancel: %v", s, err).
			WithFix(`Pass the answer as a JSON object matching the question's schema, e.g. --answer '{"confirm":true}'.`, envelope.HasPlaceholders)
	}
	return caller.Answer{Action: envelope.ActionAccept, Content: json.RawMessage(s)}, nil
}

// listAnswerer answers questions with the given answers, in order; past
// them the call ends input_required, saying what was asked.
func listAnswerer(given []caller.Answer) caller.AnswerFunc {
	var mu sync.Mutex
	next := 0
	return func(_ context.Context, q caller.Question) (caller.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(given) {
			return caller.Answer{}, inputRequired(q, fmt.Sprintf("the %d --answer value(s) given were used up", len(given)))
		}
		next++
		return given[next-1], nil
	}
}

// inputRequired is the Problem of a question nobody here can answer.
func inputRequired(q caller.Question, why string) *envelope.Problem {
	info := map[string]any{"question_id": q.ID, "message": q.Message, "schema": q.Schema}
	if q.Approval != nil {
		info["approval"] = q.Approval
	}
	return envelope.Problemf(envelope.CodeInputRequired, "tool %s asked %q and %s", q.Tool, q.Message, why).
		WithExtension("question", info).
		WithFix("Run the call on a terminal to answer it, or pass the answer up front: --answer '<JSON matching the question's schema>' (or decline).", envelope.HasPlaceholders)
}

// formAnswerer asks a person at the terminal: the question, then one
// prompt per property of its schema. End of input (Ctrl-D) declines.
// While it asks, gate (nil: none) keeps the progress display off the
// terminal.
func formAnswerer(in io.Reader, out io.Writer, gate *spinnerGate) caller.AnswerFunc {
	var mu sync.Mutex
	r := bufio.NewReader(in)
	return func(_ context.Context, q caller.Question) (caller.Answer, error) {
		mu.Lock() // one question at a time on one terminal
		defer mu.Unlock()
		if gate != nil {
			gate.pause()
			defer gate.resume()
		}
		showQuestion(out, q)
		fields, err := formFields(q.Schema)
		if err != nil {
			return caller.Answer{}, inputRequired(q, "its schema cannot be shown as a form: "+err.Error())
		}
		schema, err := envelope.CompileSchema(q.Schema)
		if err != nil {
			return caller.Answer{}, inputRequired(q, "its schema does not compile: "+err.Error())
		}
		for {
			content, err := fillForm(r, out, fields)
			if err != nil {
				fmt.Fprintln(out, "(declined)")
				return caller.Decline(), nil
			}
			raw, _ := json.Marshal(content)
			if v := schema.Validate(raw); len(v) > 0 {
				fmt.Fprintf(out, "That does not fit: %s %s; again.\n", v[0].Pointer, v[0].Message)
				continue
			}
			return caller.Answer{Action: envelope.ActionAccept, Content: raw}, nil
		}
	}
}

// showQuestion prints the question, and for an approval the tool and its
// arguments.
func showQuestion(out io.Writer, q caller.Question) {
	fmt.Fprintf(out, "\n? %s\n", q.Message)
	if q.Approval != nil {
		fmt.Fprintf(out, "  tool: %s\n  args: %s\n", q.Approval.Tool, compactJSON(q.Approval.Args))
	}
	fmt.Fprintln(out, "  (Ctrl-D declines)")
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// formField is one property of a question's schema as a prompt.
type formField struct {
	name, typ, title string
	enum             []string
	required         bool
	def              any
}

// formFields lists the schema's properties in the order the schema
// writes them (a person reads the form top to bottom).
func formFields(schema json.RawMessage) ([]formField, error) {
	var s struct {
		Properties map[string]struct {
			Type        string   `json:"type"`
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
			Default     any      `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	order, err := propertyOrder(schema)
	if err != nil {
		return nil, err
	}
	fields := make([]formField, 0, len(order))
	for _, name := range order {
		p := s.Properties[name]
		title := p.Title
		if title == "" {
			title = name
		}
		if p.Description != "" {
			title += " (" + p.Description + ")"
		}
		fields = append(fields, formField{name: name, typ: p.Type, title: title, enum: p.Enum,
			required: slices.Contains(s.Required, name), def: p.Default})
	}
	return fields, nil
}

// propertyOrder returns the names of the schema's properties as written.
func propertyOrder(schema json.RawMessage) ([]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, err
	}
	props, ok := top["properties"]
	if !ok {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		names = append(names, name)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// fillForm prompts for every field; an error is end of input.
func fillForm(r *bufio.Reader, out io.Writer, fields []formField) (map[string]any, error) {
	content := map[string]any{}
	for _, f := range fields {
		for {
			fmt.Fprintf(out, "  %s%s: ", f.title, f.hint())
			line, err := r.ReadString('\n')
			if err != nil && line == "" {
				return nil, err
			}
			v, ok, msg := f.parse(strings.TrimSpace(line))
			if msg != "" {
				fmt.Fprintf(out, "  %s\n", msg)
				continue
			}
			if ok {
				content[f.name] = v
			}
			break
		}
	}
	return content, nil
}

// hint shows what a field takes.
func (f formField) hint() string {
	switch {
	case len(f.enum) > 0:
		return " [" + strings.Join(f.enum, "/") + "]"
	case f.typ == "boolean":
		return " [y/n]"
	case f.typ == "integer" || f.typ == "number":
		return " (" + f.typ + ")"
	}
	return ""
}

// parse reads one typed value: (value, present, complaint).
func (f formField) parse(s string) (any, bool, string) {
	if s == "" {
		switch {
		case f.def != nil:
			return f.def, true, ""
		case f.required:
			return nil, false, "required"
		}
		return nil, false, ""
	}
	switch {
	case len(f.enum) > 0:
		if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= len(f.enum) {
			return f.enum[i-1], true, ""
		}
		if slices.Contains(f.enum, s) {
			return s, true, ""
		}
		return nil, false, "one of " + strings.Join(f.enum, ", ")
	case f.typ == "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, true, ""
		case "n", "no", "false":
			return false, true, ""
		}
		return nil, false, "y or n"
	case f.typ == "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false, "a whole number"
		}
		return n, true, ""
	case f.typ == "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false, "a number"
		}
		return n, true, ""
	}
	return s, true, ""
}
