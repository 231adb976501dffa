package main

import "github.com/toolmesh/toolmesh/mesh"

// credentialsFromEnv fills the NATS credentials that no flag gave from the
// environment, with the names the nats CLI uses, so that secrets need not
// sit in argv (visible in ps) or in a URL: NATS_USER, NATS_PASSWORD,
// NATS_TOKEN, NATS_CREDS (a credentials file) and NATS_NKEY (a seed file).
func credentialsFromEnv(o mesh.ConnectOptions, getenv func(string) string) mesh.ConnectOptions {
	fill := func(dst *string, name string) {
		if *dst == "" {
			*dst = getenv(name)
		}
	}
	fill(&o.User, "NATS_USER")
	fill(&o.Password, "NATS_PASSWORD")
	fill(&o.Token, "NATS_TOKEN")
	fill(&o.Creds, "NATS_CREDS")
	fill(&o.NKeySeed, "NATS_NKEY")
	return o
}
