package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// The pieces of wire that stand for envelope's types without importing
// envelope, checked here with those types.

// ForbiddenProblem made by a Registry's New is envelope's forbidden
// Problem under that registry's base, naming the operation and subject.
func TestForbiddenProblemIsEnvelopes(t *testing.T) {
	if wire.CodeForbidden != string(envelope.CodeForbidden) {
		t.Fatalf("wire.CodeForbidden = %q, envelope.CodeForbidden = %q", wire.CodeForbidden, envelope.CodeForbidden)
	}
	r := problembase.Registry{BaseURI: "https://example.test/problems"}
	p := wire.ForbiddenProblem(r.New, wire.OpPublish, "toolmesh.call.demo.echo", "no grant")
	want := `the NATS server does not permit this identity to publish "toolmesh.call.demo.echo": no grant`
	if p.Code != envelope.CodeForbidden || p.Type != r.TypeURI(envelope.CodeForbidden) || p.Detail != want {
		t.Errorf("problem %s %s %q, want %s %s %q", p.Code, p.Type, p.Detail, envelope.CodeForbidden, r.TypeURI(envelope.CodeForbidden), want)
	}
	if p.Extensions["subject"] != "toolmesh.call.demo.echo" || p.Extensions["operation"] != "publish" {
		t.Errorf("extensions %v, want subject and operation", p.Extensions)
	}
}

// boundSpec is a spec's JSON with a binding member beside it, the shape a
// spec of a worker that kept its binding in the spec would have.
type boundSpec struct {
	envelope.ToolSpec
	Binding map[string]any `json:"binding"`
}

// SpecDigest of an envelope.ToolSpec leaves a binding member out, wherever
// json.Marshal puts it, and counts every other member.
func TestSpecDigestLeavesBindingOut(t *testing.T) {
	spec := envelope.ToolSpec{Name: "demo.echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`)}
	bound := boundSpec{spec, map[string]any{"cli": map[string]any{"cmd": "echo"}}}
	plain, pointed, withBinding := wire.SpecDigest(spec), wire.SpecDigest(&spec), wire.SpecDigest(bound)
	if plain == "" || plain != pointed || plain != withBinding {
		t.Fatalf("digests: spec %q, pointer %q, with binding %q: want one, non-empty", plain, pointed, withBinding)
	}
	other := spec
	other.Description = "echoes back"
	if wire.SpecDigest(other) == plain {
		t.Fatal("a spec with another description has the same digest")
	}
}

// SplitMCPSurface finds a surface tool by its name and tag together.
func TestSplitMCPSurface(t *testing.T) {
	name := wire.MCPSurfaceName("files", wire.MCPResourcesRead)
	if ns, op, ok := wire.SplitMCPSurface(name, []string{"x", wire.MCPSurfaceTag}); !ok || ns != "files" || op != wire.MCPResourcesRead {
		t.Errorf("surface tool: %q %q %v", ns, op, ok)
	}
	for _, c := range []struct {
		name string
		tags []string
	}{
		{name, nil},
		{"files.read", []string{wire.MCPSurfaceTag}},
		{name + ".more", []string{wire.MCPSurfaceTag}},
		{"._mcp.complete", []string{wire.MCPSurfaceTag}},
	} {
		if _, _, ok := wire.SplitMCPSurface(c.name, c.tags); ok {
			t.Errorf("%q %v is taken for a surface tool", c.name, c.tags)
		}
	}
}
