package wire

import (
	"encoding/json"
	"fmt"
)

// Completion is the tri-state honest-reporting convention's second state,
// made concrete: work was done, and either all of it (Complete) or a subset
// with the gaps named. The caller merges it into a paged gather's result
// with Apply, so an agent can tell "found nothing" from "could not look"
// from "looked at part"; tools write the same members themselves.
type Completion struct {
	Complete bool `json:"complete"`
	// PendingFiles were in scope but not yet processed.
	PendingFiles []string `json:"pending_files,omitempty"`
	// UncheckedFiles were in scope and deliberately not checked.
	UncheckedFiles []string `json:"unchecked_files,omitempty"`
	// ScopeWarnings explain in words how the scope was narrowed.
	ScopeWarnings []string `json:"scope_warnings,omitempty"`
	// SkippedFiles could not be processed, each with its reason.
	SkippedFiles []SkippedFile `json:"skipped_files,omitempty"`
	// MissingPages names pages of a paged gather that failed (the mesh's own gap).
	MissingPages []string `json:"missing_pages,omitempty"`
	// NoFilesMatchedScope says the scope resolved to zero candidates,
	// distinct from "candidates found, no matches".
	NoFilesMatchedScope bool `json:"no_files_matched_scope,omitempty"`
}

// SkippedFile is one file skipped inside the requested scope, and why.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

func (c Completion) hasGap() bool {
	return len(c.PendingFiles)+len(c.UncheckedFiles)+len(c.ScopeWarnings)+len(c.SkippedFiles)+len(c.MissingPages) > 0
}

// Apply merges the completion fields into the JSON object data (overwriting
// members of the same names) and returns the new object. A partial result
// must name at least one gap.
func (c Completion) Apply(data json.RawMessage) (json.RawMessage, error) {
	if !c.Complete && !c.hasGap() {
		return nil, fmt.Errorf("complete:false must name its gap (pending_files, unchecked_files, scope_warnings, skipped_files or missing_pages)")
	}
	fields, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return mergeObjects(data, fields)
}

// mergeObjects returns base with add's members set (replacing same names),
// keeping base's order and appending new members in add's order.
func mergeObjects(base, add json.RawMessage) (json.RawMessage, error) {
	if len(base) == 0 {
		base = json.RawMessage("{}")
	}
	bm, err := uniqueMembers(base)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	am, err := uniqueMembers(add)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, m := range bm {
		index[m.name] = i
	}
	for _, m := range am {
		if i, ok := index[m.name]; ok {
			bm[i].value = m.value
			continue
		}
		bm = append(bm, m)
	}
	out := []byte{'{'}
	for i, m := range bm {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(AppendString(out, m.name), ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

type member struct {
	name  string
	value json.RawMessage
}

// uniqueMembers splits a JSON object into its members in document order,
// rejecting duplicates so a merge can never hide a member.
func uniqueMembers(data []byte) ([]member, error) {
	if err := Check(data); err != nil {
		return nil, fmt.Errorf("want a JSON object: %w", err)
	}
	var out []member
	seen := map[string]bool{}
	err := ScanMembers(data, func(name string, v []byte) error {
		if seen[name] {
			return fmt.Errorf("duplicate member %q", name)
		}
		seen[name] = true
		out = append(out, member{name, v})
		return nil
	})
	return out, err
}
