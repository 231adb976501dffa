package wire

import (
	"testing"
)

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

func TestSubjects(t *testing.T) {
	s := Subjects{}
	if s.Call("fs.read") != "toolmesh.call.fs.read" || s.Control("w1") != "toolmesh.ctl.w1" ||
		s.Catalog() != "toolmesh.catalog" || s.Describe("x") != "toolmesh.describe.x" {
		t.Error("default subjects")
	}
	if (Subjects{Prefix: "team-a"}).Call("x") != "team-a.call.x" {
		t.Error("prefix not applied")
	}
}
