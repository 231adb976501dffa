// Package workertest tests a tool's handler without NATS, the way
// net/http/httptest's ResponseRecorder tests an http.Handler: a Recorder
// is the worker.Emitter the handler streams into, and NewRequest builds
// the request it reads.
//
//	rec := workertest.NewRecorder()
//	out, err := h.Handle(ctx, workertest.NewRequest("greet", args), rec)
//	deltas, _ := workertest.DeltasAs[string](rec)
//
// A typed streaming handler takes worker.NewTypedEmitter[D](rec). The
// recorder checks what the worker checks of an emit (a delta must encode
// as JSON; nothing may be emitted after the call ended), but not what the
// worker does around the handler (argument validation, schema defaults,
// output checks): meshtest runs the whole path.
package workertest
