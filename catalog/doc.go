// Package catalog is discovery on a toolmesh: which tools the mesh's
// workers offer, read over NATS without making a call.
//
//	cat := catalog.New(nc, catalog.Config{}) // or caller.Caller.Catalog()
//	l, _ := cat.List(ctx, 0)                 // every tool, with its workers
//	for ch, err := range cat.Watch(ctx) { … } // the live catalogue
//
// What lives here: the listing (List: the JetStream worker registry read
// in one pass, or a gather without one), the spec sets workers share and
// their cache by digest, the pool scope a worker may advertise, the
// tenant's view (only the tools this NATS identity may call), Describe
// with its conflict rule, Watch over the workers' presence beacons, the
// search index (Search; the ranking is internal/toolsearch's), and fleet sampling
// over $SRV.STATS (SampleFleet, whose sample and summary shapes are
// internal/fleet's: what `toolmesh top` shows, not an API to build on).
//
// What does not: calling tools, and the liveness of calls — presence as
// a call's judge, worker probes, settle markers — which are package
// caller's. This package knows NATS, mesh, envelope and the wire codec,
// never caller: caller imports it (Caller.Catalog, Dispatch's tool
// search, the spec sets its liveness checks read), not the other way.
package catalog
