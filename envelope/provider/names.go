package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// nameRule is what one provider accepts as a tool name.
type nameRule struct {
	// MaxLen is the longest name accepted.
	MaxLen int
	// Dots and Colons say whether '.' and ':' may appear.
	Dots, Colons bool
	// LetterFirst requires the first character to be a letter or '_'.
	LetterFirst bool
}

// valid reports whether name obeys the rule.
func (r nameRule) valid(name string) bool {
	if name == "" || len(name) > r.MaxLen {
		return false
	}
	if r.LetterFirst && !isLetter(name[0]) && name[0] != '_' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-':
		case c == '.' && r.Dots, c == ':' && r.Colons:
		default:
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// simple is the readable form of a mesh name under the rule: dots become
// underscores when the provider refuses them. It may still be invalid
// (too long, bad first character); then the hashed form is used.
func (r nameRule) simple(mesh string) string {
	if r.Dots {
		return mesh
	}
	b := []byte(mesh)
	for i, c := range b {
		if c == '.' {
			b[i] = '_'
		}
	}
	return string(b)
}

// hashed is a valid name that keeps a readable prefix of the simple form
// and ends in a digest of the mesh name (salted after a clash), so two
// mesh names can only share it by a SHA-256 prefix collision, which the
// caller still checks for.
func (r nameRule) hashed(mesh string, salt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", mesh, salt))
	tail := "_" + hex.EncodeToString(sum[:5])
	prefix := r.simple(mesh)
	if r.LetterFirst && !isLetter(prefix[0]) && prefix[0] != '_' {
		prefix = "t" + prefix
	}
	if keep := r.MaxLen - len(tail); len(prefix) > keep {
		prefix = prefix[:keep]
	}
	return prefix + tail
}

// NameMap is a reversible, collision-free mapping between mesh tool names
// and one provider's tool names. It travels with every export so the
// model's calls can be mapped back to the tools they name.
type NameMap struct {
	toProvider map[string]string
	toMesh     map[string]string
}

// mapNames maps every mesh name in names under rule. Names that are
// already valid provider names keep themselves; the others take their
// readable form (dots → underscores) unless it is invalid or taken, and
// then a hashed form. The result depends only on the set of names.
func mapNames(rule nameRule, names []string) NameMap {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	m := NameMap{toProvider: map[string]string{}, toMesh: map[string]string{}}
	// Pass 1: names the provider accepts as they are claim themselves.
	for _, n := range sorted {
		if _, done := m.toProvider[n]; !done && rule.valid(n) {
			m.add(n, n)
		}
	}
	// Pass 2: the rest, in sorted order, readable form first.
	for _, n := range sorted {
		if _, done := m.toProvider[n]; done {
			continue
		}
		cand := rule.simple(n)
		for salt := 0; !rule.valid(cand) || m.taken(cand); salt++ {
			cand = rule.hashed(n, salt)
		}
		m.add(n, cand)
	}
	return m
}

func (m NameMap) add(mesh, prov string) {
	m.toProvider[mesh] = prov
	m.toMesh[prov] = mesh
}

func (m NameMap) taken(prov string) bool { _, ok := m.toMesh[prov]; return ok }

// ProviderName returns the provider's name for a mesh tool.
func (m NameMap) ProviderName(mesh string) (string, bool) {
	p, ok := m.toProvider[mesh]
	return p, ok
}

// meshName returns the mesh tool a provider name stands for.
func (m NameMap) meshName(prov string) (string, bool) {
	n, ok := m.toMesh[prov]
	return n, ok
}

// size is the number of mapped tools.
func (m NameMap) size() int { return len(m.toMesh) }

// MarshalJSON writes {"<provider name>":"<mesh name>",…}, the direction a
// model's calls are read in (keys sorted).
func (m NameMap) MarshalJSON() ([]byte, error) {
	if m.toMesh == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(m.toMesh)
}

// UnmarshalJSON reads the form MarshalJSON writes, refusing a mesh name
// mapped twice (the map would not be reversible).
func (m *NameMap) UnmarshalJSON(b []byte) error {
	var raw map[string]string
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("name map: %w", err)
	}
	out := NameMap{toProvider: map[string]string{}, toMesh: map[string]string{}}
	for p, n := range raw {
		if prev, dup := out.toProvider[n]; dup {
			return fmt.Errorf("name map: mesh tool %q is mapped from both %q and %q", n, prev, p)
		}
		out.add(n, p)
	}
	*m = out
	return nil
}
