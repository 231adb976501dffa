// Package ctxsleep waits for a duration unless a context ends first: the
// wait of a retry, a refresh or a demo tool's work, which must never keep
// a cancelled call or a stopping program waiting out the rest of it.
//
// It chooses no durations: backoff and retry policy stay with the code
// that waits.
package ctxsleep
