// Package embedserver starts the in-process nats-server of package
// mesh/embedded, and, for the module's own tests and bench only, one that
// joins or forms a cluster (package embedcluster hands such a server out
// as an embedded.Server).
package embedserver
