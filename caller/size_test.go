package caller

import (
	"testing"
	"unsafe"
)

// TestPendingStaysSmall guards the caller's memory per call in flight
// (at most 1 KiB with the goroutine that waits): a unary call's
// pending fits the 192-byte size class, what only streams, chunked
// results, questions and unnamed calls need living behind pointers made on
// first use. A field added to pending belongs in pendingRare unless every
// call needs it.
func TestPendingStaysSmall(t *testing.T) {
	if got := unsafe.Sizeof(pending{}); got > 192 {
		t.Errorf("pending is %d bytes, more than the 192 of its size class; move what only some calls need to pendingRare", got)
	}
}
