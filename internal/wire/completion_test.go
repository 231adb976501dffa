package wire

import (
	"encoding/json"
	"testing"
)

func TestHonestReporting(t *testing.T) {
	if _, err := (Completion{Complete: false}).Apply(json.RawMessage(`{}`)); err == nil {
		t.Error("a partial result with no named gap was accepted")
	}
}
