// Package embedcluster starts in-process nats-servers that join or form a
// cluster, as mesh/embedded.Servers: for the module's own cluster tests
// and the bench's replicated durable runs. Clustering is not part of
// mesh/embedded's API; a deployment clusters real nats-servers.
package embedcluster
