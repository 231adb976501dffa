// Package mesh holds what workers and callers share on NATS: subject and
// header names (wire protocol v1), control messages, the embedded
// nats-server that makes one process a complete mesh, connect options, and
// W3C trace propagation over NATS headers.
package mesh
