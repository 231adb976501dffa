package identity

import (
	"slices"
	"testing"

	"github.com/toolmesh/toolmesh/internal/oauth"
)

const policyYAML = `
people:
  - match: {sub: alice}
    account: ALICE
    namespaces: [alice, demo]
  - match: {groups: eng, email: bob@example.com}
    account: ENG
    user: bob
    namespaces: ["*"]
`

func TestPolicyMapsClaimsToGrants(t *testing.T) {
	p, err := ParsePolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := p.Map(&oauth.Identity{Subject: "alice", Claims: map[string]any{"sub": "alice"}})
	if !ok || g.Account != "ALICE" || g.User != "alice" {
		t.Fatalf("alice: %+v %v", g, ok)
	}
	perm := g.Permissions(p.Prefix)
	if !slices.Contains(perm.Pub.Allow, "toolmesh.call.alice.>") || !slices.Contains(perm.Pub.Allow, "toolmesh.call.demo.>") ||
		slices.Contains(perm.Pub.Allow, "toolmesh.call.>") || slices.ContainsFunc(perm.Pub.Allow, func(s string) bool { return s == "$JS.API.>" }) {
		t.Fatalf("alice's publish permissions %v", perm.Pub.Allow)
	}
	// Durable tasks: submitted only of the tools alice may call, through
	// the name that carries the tool; the rest of the task API by name.
	if !slices.Contains(perm.Pub.Allow, "toolmesh.tasks.call.submit.demo.>") || !slices.Contains(perm.Pub.Allow, "toolmesh.tasks.call.get") ||
		slices.ContainsFunc(perm.Pub.Allow, func(s string) bool {
			return s == "toolmesh.tasks.call.>" || s == "toolmesh.tasks.call.*" || s == "toolmesh.tasks.call.submit.>"
		}) {
		t.Fatalf("alice's task permissions %v: want submit.<tool> only for her namespaces", perm.Pub.Allow)
	}
	bob := map[string]any{"sub": "u-17", "groups": []any{"ops", "eng"}, "email": "bob@example.com"}
	g, ok = p.Map(&oauth.Identity{Subject: "u-17", Claims: bob})
	if !ok || g.Account != "ENG" || g.User != "bob" || !slices.Contains(g.Permissions("m").Pub.Allow, "m.call.>") {
		t.Fatalf("bob: %+v %v", g, ok)
	}
	bob["email"] = "mallory@example.com"
	if g, ok := p.Map(&oauth.Identity{Subject: "u-17", Claims: bob}); ok {
		t.Fatalf("a token failing one match claim was mapped: %+v", g)
	}
	if g, ok := p.Map(&oauth.Identity{Subject: "eve", Claims: map[string]any{"sub": "eve"}}); ok {
		t.Fatalf("eve, whom no rule names, was mapped: %+v", g)
	}
}

func TestPolicyRefusesBadRules(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown key":      "people: [{match: {sub: a}, account: A, namespaces: [a], admin: true}]",
		"empty match":      "people: [{match: {}, account: A, namespaces: [a]}]",
		"no account":       "people: [{match: {sub: a}, namespaces: [a]}]",
		"no namespaces":    "people: [{match: {sub: a}, account: A}]",
		"wildcard segment": "people: [{match: {sub: a}, account: A, namespaces: [\"a.>\"]}]",
		"dotted user":      "people: [{match: {sub: a}, account: A, user: a.b, namespaces: [a]}]",
	} {
		if _, err := ParsePolicy([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
