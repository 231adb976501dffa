// Package mesh holds what a user of workers and callers needs on NATS:
// the subjects of a mesh (Subjects), connect options (ConnectOptions,
// Connect) with reconnect logging, the limits and defaults of wire
// protocol v2 (docs/protocol.md) that worker and caller configurations
// refer to, the per-tool load statistics workers publish (ToolLoad,
// Histogram), and the default W3C trace propagator.
//
// The protocol's codecs are not here: they are internal to this module
// (internal/wire), so that no release is bound by them. The embedded
// nats-server that makes one process a complete mesh is package
// mesh/embedded, kept apart so that importing mesh does not compile it.
package mesh
