package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configures the streamable HTTP endpoint.
type HTTPOptions struct {
	// Bearer, when set, is required from every client as
	// "Authorization: Bearer <Bearer>" (401 otherwise); the presented
	// token is forwarded as the mesh call's bearer.
	Bearer string
	// AllowedOrigins are the browser origins accepted besides localhost
	// ones ("https://app.example.com"). A request with any other Origin
	// header gets 403; requests without one (non-browser clients) pass.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body (default 4 MiB; 413 past it).
	MaxBodyBytes int64
	// SessionIdle closes a 2025-11-25 session that has sent no request for
	// this long (default 30 minutes), so clients that vanish without
	// closing their session do not hold it forever.
	SessionIdle time.Duration
}

// protocolStateless is the first revision without sessions: requests that
// name it (or a later one) go to the SDK's stateless handler.
const protocolStateless = "2026-07-28"

// HTTPHandler serves MCP's streamable HTTP transport for both protocol
// models: requests whose Mcp-Protocol-Version header names 2026-07-28 or
// later go to a stateless SDK handler (the SDK accepts that revision only
// there), the rest — initialize and 2025-11-25 sessions — to a stateful
// one. Around both: Origin validation, the optional bearer and a body limit.
func (g *Gateway) HTTPHandler(o HTTPOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = mcp.DefaultMaxRequestBodyBytes
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = 30 * time.Minute
	}
	get := func(*http.Request) *mcp.Server { return g.srv }
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: o.MaxBodyBytes, SessionTimeout: o.SessionIdle, Logger: g.log})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: g.log,
		// Closing a 2026-07-28 response stream cancels the call.
		PropagateRequestCancellation: true})
	// The tasks extension, which the SDK does not carry, in front of it.
	tasksAndStateless := g.tasksFront(stateless, o.MaxBodyBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !originAllowed(r.Header.Get("Origin"), o.AllowedOrigins) {
			http.Error(w, "Forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		if o.Bearer != "" && !bearerMatches(r.Header.Get("Authorization"), o.Bearer) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolmesh"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= protocolStateless {
			tasksAndStateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// originAllowed accepts no Origin (a non-browser client), a localhost
// origin, or one of the configured origins.
func originAllowed(origin string, allowed []string) bool {
	if origin == "" {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(strings.TrimRight(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	switch host := u.Hostname(); host {
	case "localhost", "127.0.0.1", "::1":
		return true
	default:
		return false
	}
}

// bearerMatches compares in constant time, so the token cannot be guessed
// byte by byte from response times.
func bearerMatches(header, want string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(want)) == 1
}

// ServeHTTP serves h on ln until ctx ends, then shuts down gracefully:
// no new connections, requests in flight get up to grace to finish.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
