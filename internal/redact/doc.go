// Package redact removes secrets from text the mesh reports: Problems,
// stats, spans and logs. One Redactor holds every secret of a call — the
// caller's bearer, the values of a binding's env, a bridged server's env
// and header values — and removes each whole and every fragment of it at
// least MinFragment bytes long, so text that was cut anywhere (a stderr
// tail, an output excerpt) leaks no part of one either. It also hides the
// credentials of any URL in the text (scheme://user:password@host keeps
// only the user name), whatever the Redactor holds: a nil *Redactor does
// that alone. Redact first, then truncate: truncating redacted text can
// never bring a fragment back.
//
// It imports the public envelope package because what it cleans most is a
// Problem (its detail, fixes and extensions) on its way to a caller.
package redact
