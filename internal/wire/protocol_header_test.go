package wire

import (
	"testing"

	"github.com/nats-io/nats.go"
)

func TestHeaderIsCaseInsensitive(t *testing.T) {
	h := nats.Header{"status": {"503"}}
	if Header(h, "Status") != "503" {
		t.Error("lower-case name not found")
	}
	if Header(h, HeaderRequestInfo) != "" {
		t.Error("absent header found")
	}
}
