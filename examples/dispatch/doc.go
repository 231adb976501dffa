// Command dispatch runs a model's tool calls on a mesh with
// caller.Dispatch, the step an agent loop repeats: send the conversation
// and the tools to the model; while its answer holds tool calls, Dispatch
// them and append the tool messages it returns; send again.
//
// No model is called here. The program starts a mesh in-process, exports
// its tools in OpenAI Chat Completions' shape, and feeds Dispatch an
// assistant message as such a model returns it, with two tool calls: one
// that works and one with an argument the tool's schema refuses. It
// prints the tool messages to send back, one per call, in order.
//
//	go run ./examples/dispatch
package main
