package main

import (
	"context"
	"errors"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
)

// TestWordsCount calls the tool through a real mesh: arguments are
// encoded, validated against the inferred schema, sent over NATS and the
// result decoded, as in production.
func TestWordsCount(t *testing.T) {
	m := meshtest.New(t) // server, worker and caller; stopped when t ends
	if err := register(m.Worker); err != nil {
		t.Fatal(err)
	}
	got, err := caller.CallAs[CountOut](context.Background(), m.Caller, "words.count",
		CountIn{Text: "the quick brown fox"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (CountOut{Words: 4, Longest: "quick"}); got != want {
		t.Errorf("words.count = %+v, want %+v", got, want)
	}
}

// TestWordsCountRefusesBadInput checks the schema AddTool inferred: a
// number where text belongs never reaches countWords, and the caller gets
// an invalid_input Problem it can act on.
func TestWordsCountRefusesBadInput(t *testing.T) {
	m := meshtest.New(t)
	if err := register(m.Worker); err != nil {
		t.Fatal(err)
	}
	_, err := m.Caller.Call(context.Background(), "words.count", map[string]any{"text": 42})
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeInvalidInput {
		t.Fatalf("words.count with a number: %v, want an invalid_input Problem", err)
	}
}
