// Package callsettings holds what a call's options come to on a caller, in
// the terms a service that carries a call on reads them: package tasks
// sends them with a durable task. It sits under internal/ because only the
// module's own packages read it; users set these through caller's Option
// values (WithBearer, WithTimeout…) and caller.Config.Options.
//
// It imports nothing of the module: caller fills it in, tasks reads it.
package callsettings
