// Package embedded runs a nats-server inside the process, with JetStream
// (the worker registry) on: for tests (see package meshtest), `toolmesh
// dev` and benchmarks (toolmesh.StartMesh adds a worker and a caller). It
// lives apart from package mesh so that importing worker or caller does
// not compile nats-server.
package embedded
