package provider

import (
	"encoding/json"

	"github.com/toolmesh/toolmesh/envelope"
)

// Outcome is what a model gets to read about one call: the result data,
// or the Problem, plus any deltas streamed before the end.
type Outcome struct {
	Data    json.RawMessage
	Problem *envelope.Problem
	Deltas  []json.RawMessage
}
