// Package callsettings holds what a call's options come to on a caller, in
// the terms a service that carries a call on reads them: package tasks
// sends them with a durable task. It sits under internal/ because only the
// module's own packages read it; users set these through caller.Options.
package callsettings

import "time"

// Settings is what a call's options come to, the caller's own
// (caller.Config.Options) applied first.
type Settings struct {
	Bearer         string
	IdempotencyKey string
	Idempotent     bool
	Folded         bool
	Timeout        time.Duration
	// PickupTimeout is the caller's own (caller.Config.PickupTimeout, its
	// default filled in): how long a client retries a service that has not
	// answered before it gives up.
	PickupTimeout time.Duration
}
