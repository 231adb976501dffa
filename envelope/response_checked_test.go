package envelope

import (
	"encoding/json"
	"testing"
)

// A Response made from a validated result reads its members without a
// second validation pass, and a Data assigned afterwards is validated
// again: invalid JSON put there is never read as members.
func TestResponseCarriesValidation(t *testing.T) {
	ev, err := ParseEvent([]byte(`{"type":"result","data":{"blob":"x\"y","n":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ResponseFromEvent("c1", ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data json.RawMessage // nil: as built
		get  string
		want string
		ok   bool
	}{
		{"validated", nil, "blob", `"x\"y"`, true},
		{"validated, second member", nil, "n", `1`, true},
		{"validated, absent", nil, "zzz", ``, false},
		{"reassigned, valid", json.RawMessage(`{"blob":2}`), "blob", `2`, true},
		{"reassigned, invalid", json.RawMessage(`{"blob":2,}`), "blob", ``, false},
		{"reassigned, duplicate", json.RawMessage(`{"blob":2,"blob":3}`), "blob", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := r
			if tc.data != nil {
				r.Data = tc.data
			}
			got, ok := r.Get(tc.get)
			if ok != tc.ok || string(got) != tc.want {
				t.Errorf("Get(%q) = %s %v, want %s %v", tc.get, got, ok, tc.want, tc.ok)
			}
		})
	}
}
