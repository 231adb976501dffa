package main

import (
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// The pretty form of a Problem: the error line, then its fix.
func TestPrettyProblem(t *testing.T) {
	seed := envelope.NewProblem(envelope.CodeInvalidInput, "invalid input: divisor cannot be zero")
	seed.Type = "https://zircote.com/rust-template/errors/invalid-input/v1"
	seed.Instance = "urn:rust_template:invalid-input"
	seed.WithFix("Correct the input so it satisfies the documented constraints, then retry.", envelope.MaybeIncorrect)
	if got := prettyProblem(seed); got != "Error: invalid input: divisor cannot be zero\n  fix: Correct the input so it satisfies the documented constraints, then retry.\n" {
		t.Errorf("pretty: %q", got)
	}
}

func TestSelectFormat(t *testing.T) {
	cases := []struct {
		flag string
		tty  bool
		want OutputFormat
	}{{"json", true, FormatJSON}, {"pretty", false, FormatPretty}, {"", true, FormatPretty}, {"", false, FormatJSON}}
	for _, c := range cases {
		if got, err := SelectFormat(c.flag, c.tty); err != nil || got != c.want {
			t.Errorf("SelectFormat(%q,%v) = %v, %v", c.flag, c.tty, got, err)
		}
	}
	if _, err := SelectFormat("yaml", true); err == nil {
		t.Error("unknown format accepted")
	}
}
