package fleet

import "time"

// Counters is a snapshot of one tool's ADR-32 counters on one worker, the
// numbers its $SRV.STATS endpoint carries: calls, errors, the last error's
// code and title, and the time spent from admission to terminal. The
// worker hands them out (worker.Worker.ToolStats) so that the module's
// tests can wait for calls to be counted; a program reads them from
// $SRV.STATS.
type Counters struct {
	Requests       int
	Errors         int
	LastError      string
	ProcessingTime time.Duration
}
