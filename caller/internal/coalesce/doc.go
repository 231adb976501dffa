// Package coalesce holds a caller's call coalescing (protocol v2, §4.3):
// each tool's combining publisher (Sender), which lets one publish to the
// tool be in progress and queues the calls made meanwhile, and the
// sending of those queued calls in rounds, packed into batch messages of
// at most MaxBatch calls, the server's max_payload and an even share of
// the queue per worker of the tool.
//
// It holds no connection and knows nothing of what a call is: the caller
// publishes a lone call itself, and hands a Sender a Link through which
// the queued calls are published, registered as a batch (so that their
// replies find them) and failed. What a batch's replies are routed to,
// and the public Config.NoCoalescing and CoalesceStats, stay in package caller.
package coalesce
