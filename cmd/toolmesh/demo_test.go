package main

import (
	"context"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/meshtest"
)

// TestDemoCountDefaultFromSchema: count's n defaults to 5 because its
// published schema says so, not because the handler hard-codes it.
func TestDemoCountDefaultFromSchema(t *testing.T) {
	m := meshtest.New(t)
	if err := registerDemo(m.Worker); err != nil {
		t.Fatal(err)
	}
	var schema string
	for _, s := range m.Worker.Specs() {
		if s.Name == "count" {
			schema = string(s.InputSchema)
		}
	}
	if !strings.Contains(schema, `"default":5`) {
		t.Fatalf("count's schema %s declares no default of 5", schema)
	}
	got, err := caller.CallAs[countResult](context.Background(), m.Caller, "count", map[string]int{"interval_ms": 0})
	if err != nil || got.Count != 5 {
		t.Fatalf("count with no n: %+v, %v; want count 5", got, err)
	}
	if _, err := caller.CallAs[countResult](context.Background(), m.Caller, "count", map[string]any{"n": "five"}); err == nil {
		t.Fatal("count accepted n:\"five\"")
	}
}
