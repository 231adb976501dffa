package wire

import "time"

// AuditRecord is one entry of the audit trail: who (the identity the
// NATS server stamped, split into tenant and person), what (the tool and
// a digest of its arguments, never the arguments), when, and how it
// ended. Kind "call" is a call: one that reached the handler's
// middleware (workermw.Audit), or one the worker refused before (workermw.AuditRefused,
// Ran "no"); Outcome is "ok" or the Problem's code, Ran whether the
// handler ran.
// Kind "task" is a call of the task service's API (workermw.AuditConfig.Kind),
// whose caller is always the task's owner. Kind "answer" and "approval" are answers to a call's questions (see
// workermw.AuditAnswers): Outcome is the answer's action, or for an approval
// "approved" or "refused". Records travel as JSON on
// <prefix>.audit.<tool>.
type AuditRecord struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	Worker     string    `json:"worker,omitempty"`
	Identity   string    `json:"identity,omitempty"`
	Tenant     string    `json:"tenant,omitempty"`
	Person     string    `json:"person,omitempty"`
	Tool       string    `json:"tool"`
	CallID     string    `json:"call_id"`
	ArgsSHA256 string    `json:"args_sha256,omitempty"`
	Outcome    string    `json:"outcome"`
	Ran        string    `json:"ran,omitempty"`
	// QuestionID and AnswerSHA256 name an answer and digest its content.
	QuestionID   string `json:"question_id,omitempty"`
	AnswerSHA256 string `json:"answer_sha256,omitempty"`
	// DurationMS is how long the handler (and the middleware inside this
	// one) took, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
}
