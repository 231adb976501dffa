package worker

// CanAsk reports whether the call's caller declared that it answers
// questions (ask=1, docs/protocol.md §23.1): a handler that relays to
// another protocol (the MCP bridge) declares capabilities to match.
func (r *Request) CanAsk() bool { return r.call != nil && r.call.ask1 }
