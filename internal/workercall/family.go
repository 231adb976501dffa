package workercall

// Family is a handler that serves a family of tool names: registered as
// NAME, it takes the calls of every NAME.<rest> (the subject
// <p>.call.NAME.>, not NAME itself), and its Request.Tool is the name the
// caller called. The task service's submit is one: submit.<tool> submits
// a task of <tool>, so the server's permission to publish on that subject
// decides which tools a caller may submit, as its permission on
// <p>.call.<tool> decides which it may call. Its method names Key, so
// only the module's own handlers can be one.
type Family interface {
	ServesFamily(Key)
}
