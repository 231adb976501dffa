// Package toolmesh runs a whole toolmesh in one process: StartMesh starts
// an embedded nats-server (JetStream on), a worker and a caller, for
// programs, examples and demos.
//
// It holds nothing else. The mesh's own packages are worker (hosting
// tools), caller (calling them), catalog (discovering them), tasks (durable
// calls), meshtest (the same mesh inside a test), mesh (connect options),
// mesh/embedded (the server StartMesh starts) and envelope (the shapes a
// call carries); the subjects and limits of the protocol are internal to
// the module, and docs/protocol.md is the wire contract.
package toolmesh
