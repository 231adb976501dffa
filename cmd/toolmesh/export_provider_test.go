package main

import (
	"strings"
	"testing"
)

// Every provider parses as the command line spells it; an unknown one is
// refused with the list of known ones.
func TestParseProvider(t *testing.T) {
	for _, s := range []string{"openai", "openai-responses", "anthropic", "gemini", "mcp"} {
		if p, err := parseProvider(s); err != nil || string(p) != s {
			t.Errorf("%s: %q %v", s, p, err)
		}
	}
	if _, err := parseProvider("cohere"); err == nil || !strings.Contains(err.Error(), "want openai, openai-responses, anthropic, gemini, mcp") {
		t.Errorf("cohere: %v", err)
	}
}
