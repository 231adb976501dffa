// Package textcut shortens text for messages and displays without
// splitting a UTF-8 character: every cut lands on a rune boundary, at
// most the given number of bytes from the kept end.
//
// It knows nothing of secrets: text is redacted (internal/redact) before
// it is cut.
package textcut
