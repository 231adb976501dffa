package caller

import (
	"time"

	"github.com/toolmesh/toolmesh/envelope"
)

// DefaultRetries is how many times a call's retry-safe failures are
// retried when Config.Retries is left zero.
const DefaultRetries = 2

// NoRetries, as Config.Retries or WithRetries' argument, turns retries
// off. Zero never does: in every Config field and option of this module,
// zero means the documented default, and "none" has a name of its own.
const NoRetries = -1

// Option adjusts one call.
type Option func(*callOptions)

type callOptions struct {
	bearer         string
	idempotencyKey string
	idempotent     bool
	dryRun         bool
	page           *envelope.Page
	format         *envelope.ResponseFormat
	timeout        time.Duration
	retries        int
	window         int
	ask            bool       // ask=1: the call answers questions
	fold           bool       // fold=1: a stream call that gets the unary result
	onQuestion     AnswerFunc // answers them, or nil (a Stream's reader does)
	spec           string     // digest of the spec the call was validated against (WithSpec)
	serverArgs     bool       // server_args=1 (WithServerArgs)
}

// WithBearer sends token as "Authorization: Bearer <token>"; CLI-bound
// tools receive it where their binding's env says $ATD_BEARER
// ("$ATD_BEARER"). Config.Options can send it on every call.
func WithBearer(token string) Option { return func(o *callOptions) { o.bearer = token } }

// WithIdempotencyKey names this logical operation so it may be retried
// safely; transient failures are then retried.
func WithIdempotencyKey(key string) Option { return func(o *callOptions) { o.idempotencyKey = key } }

// Idempotent declares the tool idempotent for this call, allowing retries
// of transient failures (worker_lost, connection_lost, stream_gap, timeout).
func Idempotent() Option { return func(o *callOptions) { o.idempotent = true } }

// DryRun asks the tool to report what it would do without doing it.
func DryRun() Option { return func(o *callOptions) { o.dryRun = true } }

// WithPage selects paging: Page{All: true} or a cursor.
func WithPage(p envelope.Page) Option { return func(o *callOptions) { o.page = &p } }

// WithResponseFormat constrains the result's shape; the worker answers
// output_invalid when the result does not conform.
func WithResponseFormat(rf envelope.ResponseFormat) Option {
	return func(o *callOptions) { o.format = &rf }
}

// WithTimeout bounds the call (on top of the context's own deadline).
func WithTimeout(d time.Duration) Option { return func(o *callOptions) { o.timeout = d } }

// WithRetries sets how many times a retry-safe failure is retried: n > 0
// that many times, NoRetries never, and 0 the caller's own setting
// (Config.Retries, itself DefaultRetries when zero) — zero means the
// default here as in every Config. overloaded is always retry-safe: the
// handler never ran.
func WithRetries(n int) Option {
	return func(o *callOptions) {
		switch {
		case n < 0:
			o.retries = 0
		case n > 0:
			o.retries = n
		}
	}
}

// WithWindow sets the stream's event credit (default 256, at least 2): at
// most this many events of one stream wait unread in the caller. Set in
// Config.Options, it is every stream's.
func WithWindow(n int) Option { return func(o *callOptions) { o.window = n } }

// Folded makes a Stream call return what a unary call of the tool
// returns (docs/protocol.md §4.1 fold): the worker still sends the start
// event and questions, but the handler runs as for a unary call, so a
// tool that streams its output (a CLI tool's lines or NDJSON items)
// gathers it into its result, and progress and deltas are not sent. The
// task service runs the attempts of a unary task so.
func Folded() Option { return func(o *callOptions) { o.fold = true } }

// WithServerArgs sends the call for an MCP client of a bridged MCP
// server: a tool whose spec has mcp (envelope.MCPTool) gets its args
// unchecked by the worker, for the server to judge and to refuse in its
// own words, as it would used directly. Every other tool's args are
// checked against its input schema as ever. The MCP gateway sends it.
func WithServerArgs() Option { return func(o *callOptions) { o.serverArgs = true } }
