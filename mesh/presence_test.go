package mesh

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
