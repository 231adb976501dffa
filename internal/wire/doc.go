// Package wire is the codec of toolmesh wire protocol v2 (docs/protocol.md)
// that the worker and the caller share: call metadata lines, reply frames,
// batches, control messages, presence beacons, catalogue entries, ADR-32
// discovery subjects, and the server-stamped identity and permission
// errors NATS reports. It is internal so that no release of the public
// packages is bound by its shape; the protocol itself is the contract.
package wire
