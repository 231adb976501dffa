package mesh

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

// Every subject the presence and registry features use is a valid NATS
// subject or bucket name under any prefix.
func TestPresenceSubjects(t *testing.T) {
	cases := []struct{ prefix, presence, catalog, bucket string }{
		{"", "toolmesh.presence.W1", "toolmesh.catalog.W1", "toolmesh_workers_toolmesh"},
		{"acme.prod", "acme.prod.presence.W1", "acme.prod.catalog.W1", "toolmesh_workers_acme_prod"},
	}
	for _, c := range cases {
		s := Subjects{Prefix: c.prefix}
		if s.Presence("W1") != c.presence || s.WorkerCatalog("W1") != c.catalog || s.RegistryBucket() != c.bucket {
			t.Errorf("prefix %q: %s %s %s", c.prefix, s.Presence("W1"), s.WorkerCatalog("W1"), s.RegistryBucket())
		}
	}
}
