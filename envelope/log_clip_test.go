package envelope

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A long log message is cut on a character, never inside one.
func TestLogTextCutsOnACharacter(t *testing.T) {
	data, _ := json.Marshal("a" + strings.Repeat("é", 400))
	got := LogMessage{Level: "info", Data: data}.text()
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("text() = %q: want valid UTF-8 ending in …", got)
	}
}
