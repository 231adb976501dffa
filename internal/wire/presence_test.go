package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The presence beacon's wire shape is pinned by a golden file.
func TestBeaconWireShape(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "beacon.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(Beacon{WorkerID: "01J0000000000000000000WKR1", State: BeaconUp, Revision: 3, IntervalMS: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Fatalf("beacon\n got  %s\n want %s", got, want)
	}
}
