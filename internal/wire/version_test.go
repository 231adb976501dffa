package wire_test

import (
	"testing"

	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh"
)

// mesh.WireVersion is what users read; wire.Version is what the codec
// speaks. They are one number.
func TestVersionIsMeshWireVersion(t *testing.T) {
	if wire.Version != mesh.WireVersion {
		t.Fatalf("wire.Version = %d, mesh.WireVersion = %d", wire.Version, mesh.WireVersion)
	}
}
