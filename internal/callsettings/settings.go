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
