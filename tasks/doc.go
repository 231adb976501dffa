// Package tasks runs durable calls (docs/protocol.md §22): a task service
// that keeps calls in JetStream so that they outlive their caller, their
// worker and a server. Towards callers the service is a worker hosting the
// task API (submit, watch, get, answer, cancel, ls) under the prefix <p>.tasks;
// towards workers it is an ordinary caller that runs each attempt of a
// task as a stream-mode call and records every event. Only the service
// touches JetStream.
//
// The package also holds the client side: Client (NewClient over a
// caller.Caller) submits, follows, answers and cancels tasks through that
// API, and Record, Event and the task states are what both sides say. The
// client lives here rather than in package caller so that the call path
// stays the caller's only concern; it imports caller, never the reverse.
package tasks
