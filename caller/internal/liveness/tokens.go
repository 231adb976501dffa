package liveness

import "crypto/rand"

// unguessable is the random tail of a probe's or a settle marker's reply
// token (80 bits, "-" and 16 base32 characters): the reply subject is
// under the caller's inbox, on which others may be allowed to publish
// (the task service's inbox, which every worker pool may answer on), and
// a reply that only needs the token to be believed must not be one
// another client can guess (a forged 503 would find a worker gone).
func unguessable() string { return "-" + rand.Text()[:16] }
