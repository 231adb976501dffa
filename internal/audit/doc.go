// Package audit keeps the operator's audit trail: the append-only
// JetStream stream that captures the records workermw.Audit publishes,
// and the reading of it that `toolmesh audit` prints.
//
// The records themselves are internal/wire's (AuditRecord), and
// publishing them is worker/workermw's; this package only keeps and reads
// them.
package audit
