package identity

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"go.yaml.in/yaml/v3"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

// Policy is the operator's mapping from tokens to mesh identities.
//
//	prefix: toolmesh
//	people:
//	  - match: {sub: alice}
//	    account: ALICE
//	    user: alice
//	    namespaces: [demo]
//	  - match: {groups: eng}
//	    account: ENG
//	    namespaces: ["*"]
type Policy struct {
	// Prefix is the mesh's subject prefix (default "toolmesh").
	Prefix string `yaml:"prefix"`
	// People are tried in order; the first rule whose match holds wins,
	// and a person no rule matches may not connect.
	People []Rule `yaml:"people"`
}

// Rule maps the tokens it matches to one mesh identity.
type Rule struct {
	// Match lists claims and the value each must have: a string claim
	// equal to it, or an array claim holding it. All must hold; an empty
	// match is refused (it would admit every token of the issuer).
	Match map[string]string `yaml:"match"`
	// Account is the NATS account the person connects into (one of the
	// server's tenant accounts).
	Account string `yaml:"account"`
	// User is the person's NATS user name, which workers see in the
	// call's identity as "<account>/<user>" (default: the token's sub).
	User string `yaml:"user"`
	// Namespaces are the tool namespaces the person may call: "demo"
	// allows demo.*, "*" every tool.
	Namespaces []string `yaml:"namespaces"`
}

// Grant is what a rule gives one person.
type Grant struct {
	Account, User string
	Namespaces    []string
}

// LoadPolicy reads and checks a policy file; unknown keys are refused.
func LoadPolicy(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "policy %s: %v", path, err)
	}
	return ParsePolicy(b)
}

// ParsePolicy decodes and checks a policy.
func ParsePolicy(b []byte) (*Policy, error) {
	var p Policy
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "policy: %v", err)
	}
	if p.Prefix == "" {
		p.Prefix = "toolmesh"
	}
	for i, r := range p.People {
		if len(r.Match) == 0 || r.Account == "" || len(r.Namespaces) == 0 {
			return nil, envelope.Problemf(envelope.CodeInvalidConfig, "policy: people[%d] needs match, account and namespaces", i)
		}
		for _, ns := range r.Namespaces {
			if ns == "*" {
				continue
			}
			if envelope.ValidateToolName(ns) != nil || strings.ContainsAny(ns, ".*>") {
				return nil, envelope.Problemf(envelope.CodeInvalidConfig, "policy: people[%d]: namespace %q: want one name segment or \"*\"", i, ns)
			}
		}
		if strings.ContainsAny(r.User, " \t.*>") {
			return nil, envelope.Problemf(envelope.CodeInvalidConfig, "policy: people[%d]: user %q: no spaces, dots or wildcards", i, r.User)
		}
	}
	return &p, nil
}

// Map is the grant of the first rule id matches (false: none does).
func (p *Policy) Map(id *oauth.Identity) (Grant, bool) {
	for _, r := range p.People {
		if !matches(r.Match, id.Claims) {
			continue
		}
		g := Grant{Account: r.Account, User: r.User, Namespaces: r.Namespaces}
		if g.User == "" {
			g.User = id.Subject
		}
		return g, true
	}
	return Grant{}, false
}

func matches(want map[string]string, claims map[string]any) bool {
	for k, v := range want {
		switch c := claims[k].(type) {
		case string:
			if c != v {
				return false
			}
		case []any:
			if !slices.Contains(c, any(v)) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Permissions are the NATS permissions of g on a mesh with prefix: what
// deploy/secure gives a tenant user, with calls allowed only into the
// granted namespaces, and durable tasks submitted only of tools in them
// (<p>.tasks.call.submit.<tool>, docs/protocol.md §22.10). The server
// tells the user these on $SYS.REQ.USER.INFO, so catalogues and MCP
// tools/list show exactly the tools granted.
func (g Grant) Permissions(prefix string) jwt.Permissions {
	var pub jwt.StringList
	for _, ns := range g.Namespaces {
		if ns == "*" {
			pub.Add(prefix+".call.>", prefix+".tasks.call.submit.>")
		} else {
			pub.Add(fmt.Sprintf("%s.call.%s.>", prefix, ns), fmt.Sprintf("%s.tasks.call.submit.%s.>", prefix, ns))
		}
	}
	for _, op := range []string{"watch", "get", "answer", "cancel", "ls"} {
		pub.Add(prefix + ".tasks.call." + op)
	}
	pub.Add("$SYS.REQ.USER.INFO", prefix+".ctl.>", prefix+".catalog", prefix+".catalog.>", prefix+".describe.>",
		"$SRV.>", prefix+".tasks.ctl.>")
	return jwt.Permissions{
		Pub: jwt.Permission{Allow: pub},
		Sub: jwt.Permission{Allow: jwt.StringList{"_INBOX.>", prefix + ".presence.>"}},
	}
}
