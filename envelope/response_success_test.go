package envelope

import (
	"encoding/json"
	"testing"
)

// A result object is flattened beside id and success; one with a member
// of its own named id or success is carried whole under "result".
func TestSuccessFlattensOrCarriesWhole(t *testing.T) {
	for _, c := range []struct{ id, data, want string }{
		{"1", `{"matches":3}`, `{"id":"1","success":true,"matches":3}`},
		{"2", `{"success":true,"message":"deleted"}`, `{"id":"2","success":true,"result":{"success":true,"message":"deleted"}}`},
	} {
		r, err := successResponse(c.id, json.RawMessage(c.data))
		if err != nil {
			t.Fatalf("Success(%s): %v", c.data, err)
		}
		b, err := json.Marshal(r)
		if err != nil || string(b) != c.want {
			t.Errorf("Success(%s) = %s, %v; want %s", c.data, b, err, c.want)
		}
	}
}
