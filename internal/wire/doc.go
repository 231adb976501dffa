// Package wire is the codec of toolmesh wire protocol v2 (docs/protocol.md)
// that the worker and the caller share, and the module's one home of the
// wire encoding: call bodies and metadata lines, reply frames, batches,
// control messages, presence beacons, catalogue entries, audit records,
// the honest-reporting completion members, a mesh's subjects and the
// protocol's defaults and bounds (Subjects, DefaultWindow, MissedBeats…),
// ADR-32 discovery subjects, and the server-stamped identity and
// permission errors NATS reports; beside them the JSON primitives every encoder of the module
// writes and reads with — string and number appenders byte for byte
// equal to encoding/json's (AppendString, AppendFloat), the member
// scanner the decoders split flat objects with (ScanRawMembers), and the
// validator (Valid, with its own grammar for small documents).
//
// It imports no public package of this module, as net/http/internal
// imports nothing of net/http: package envelope encodes its events and
// Problems with the primitives here, so the dependency runs one way. Where
// a message holds envelope's types, wire takes them as type parameters
// (Call's page and response format, CatalogEntry's tools, the Problem
// ForbiddenProblem builds) or as a value to encode (SpecDigest).
//
// A worker's call path, from the NATS message to the handler and back,
// uses three packages: worker, envelope and this one.
//
// It is internal so that no release of the public packages is bound by
// its shape; the protocol itself is the contract.
package wire
