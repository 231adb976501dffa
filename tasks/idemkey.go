package tasks

import (
	"crypto/sha256"
	"encoding/hex"
)

// attemptKey is the idempotency key an attempt of owner's task with key
// carries to the worker: the owner's key and a digest of the key, never
// the key alone. Deduplicating by key is the handler's job (§4.1 idem),
// and a careful handler keeps each identity's keys apart; but the task
// service calls tools as its own identity for every owner, so without
// the owner in the key two tenants' tasks under one key would be one to
// the handler, and the second would get the first's result. The key is
// the same for every attempt of the task, so a re-run is still known.
func attemptKey(owner, key string) string {
	sum := sha256.Sum256([]byte(key))
	return owner + "." + hex.EncodeToString(sum[:])
}
