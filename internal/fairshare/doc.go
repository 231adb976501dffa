// Package fairshare is a counting semaphore that serves its waiters round
// robin by sender, so a sender who queues many calls on a tool delays only
// its own: when a slot frees, the next sender in turn takes it, however
// many calls the senders before it queued. It also bounds how many calls
// one sender may queue, so one sender's flood is refused at once rather
// than held.
//
// It knows nothing of calls or tools: worker/cli gives each CLI tool one
// for its max_concurrent slots and words the refusals; a worker's own
// admission and shares are package worker's.
package fairshare
