// Package worker hosts tools on a toolmesh: each registered tool gets one
// queue subscription, calls run concurrently up to a limit, and every call
// ends in exactly one terminal event. Go handlers and command-line programs
// (package worker/cli) sit behind the same Handler interface.
//
// A minimal worker:
//
//	w, _ := worker.New(nc, worker.Config{})
//	w.Register(envelope.ToolSpec{Name: "echo"}, worker.HandlerFunc(
//		func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
//			return json.RawMessage(req.Args), nil
//		}))
//	defer w.Drain(context.Background())
//
// Specs, Problems and their codes are package envelope's, named from there
// (as caller does): the one registry of codes has one home.
//
// A call's path, from its NATS message to the handler and back, uses three
// packages: worker (admission, shares, the pickup confirmation, the
// handler's context, the terminal event), envelope (the events and
// Problems and their encoding) and internal/wire (call metadata and
// bodies, frames, and the JSON primitives envelope encodes with). Read it
// from Worker.newCall (guard.go) through call.execute (call.go) to
// call.encode (send.go).
package worker
