// Package caller invokes tools on a toolmesh. One Caller holds ONE wildcard
// inbox subscription and routes every event to its call by the call id in
// the subject's last token, so thousands of calls share one connection with
// no subscription per call.
//
//	c, _ := caller.New(nc, caller.Config{})
//	defer c.Close()
//	resp, err := c.Call(ctx, "echo", map[string]any{"message": "hi"})
//
// What lives here: the call path — Call, CallAs, CallEvent, Stream and
// typed streams, paging a tool's results (CallPage, CallAll), Dispatch of
// a model's tool calls, middleware, retries, questions a tool asks — and
// the liveness that judges calls in flight: heartbeats, the workers'
// presence beacons, probes of silent workers and settle markers
// (protocol v2, §8.2), whose tables and judging are
// caller/internal/liveness's — and the coalescing of unary calls into
// batch messages, whose queueing is caller/internal/coalesce's.
//
// What does not: discovery. Listing, watching, describing and searching
// the mesh's tools, and sampling the fleet's stats, are package catalog's;
// Caller.Catalog returns the caller's own catalogue, on its connection.
// Durable tasks are package tasks' (tasks.NewClient over a Caller, which
// reaches the task service through Caller.Service).
//
// The shapes a call carries — envelope.ToolSpec, envelope.Problem and its
// codes, envelope.ToolEvent, envelope.Response — are named from package
// envelope, not re-exported here: one name per thing, so that go doc,
// errors.As and a type switch see the same type whichever package a
// reader came from, and a code added to the registry appears once.
package caller
