// Package meshtest starts a whole toolmesh inside a test, the way
// net/http/httptest starts an HTTP server: an embedded nats-server (no
// port, in-process connections, JetStream on so a Catalog is complete and
// returns as soon as every worker answered), a worker and a caller that log
// to the test's output, all stopped when the test ends.
//
//	m := meshtest.New(t)
//	worker.AddTool(m.Worker, envelope.ToolSpec{Name: "add"}, add)
//	sum, err := caller.CallAs[int](ctx, m.Caller, "add", Pair{1, 2})
//
// The same mesh in a program is toolmesh.StartMesh, which this wraps; a
// handler tested without NATS is package worker/workertest's.
package meshtest
