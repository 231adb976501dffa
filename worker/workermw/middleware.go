package workermw

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/callmetrics"
	"github.com/toolmesh/toolmesh/worker"
)

// errBadBearer is what a bearer check returns for a token it refuses.
var errBadBearer = errors.New("the bearer token is not accepted")

// RequireBearer refuses a call whose bearer token is missing, or that
// check refuses, with unauthorized before the handler runs. check gets the
// token (never log it) and returns nil to accept it.
func RequireBearer(check func(ctx context.Context, token string) error) worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			if req.Bearer == "" {
				return nil, envelope.NewProblem(envelope.CodeUnauthorized, fmt.Sprintf("tool %s needs a bearer token", req.Tool)).
					WithFix("Send one: caller.WithBearer, or caller.Config.Options for every call.", envelope.HasPlaceholders)
			}
			if err := check(ctx, req.Bearer); err != nil {
				return nil, envelope.NewProblem(envelope.CodeUnauthorized, fmt.Sprintf("tool %s refused the bearer token", req.Tool))
			}
			return next.Handle(ctx, req, emit)
		})
	}
}

// BearerTokens is RequireBearer accepting exactly the given tokens,
// compared in constant time. Empty tokens are ignored, so an unset
// variable does not open the door to everyone.
func BearerTokens(tokens ...string) worker.Middleware {
	return RequireBearer(func(_ context.Context, got string) error {
		for _, t := range tokens {
			if t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(got)) == 1 {
				return nil
			}
		}
		return errBadBearer
	})
}

// perTool keeps one value per tool name, made on first use.
type perTool[T any] struct {
	mu   sync.Mutex
	m    map[string]T
	make func() T
}

func (p *perTool[T]) get(tool string) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[tool]
	if !ok {
		if p.m == nil {
			p.m = map[string]T{}
		}
		v = p.make()
		p.m[tool] = v
	}
	return v
}

// RateLimit lets each tool start at most perSecond calls a second on
// average, in bursts of up to burst; a call past the limit is answered
// overloaded with the wait as retry_after (callers retry overloaded on
// their own, since the handler never ran). Each tool has its own budget.
func RateLimit(perSecond float64, burst int) worker.Middleware {
	limits := &perTool[*rate.Limiter]{make: func() *rate.Limiter { return rate.NewLimiter(rate.Limit(perSecond), burst) }}
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			r := limits.get(req.Tool).Reserve()
			if d := r.Delay(); !r.OK() || d > 0 {
				r.Cancel()
				return nil, envelope.NewProblem(envelope.CodeOverloaded,
					fmt.Sprintf("tool %s takes at most %g calls a second on this worker", req.Tool, perSecond)).
					WithRetryAfter(max(d.Seconds(), 0.001))
			}
			return next.Handle(ctx, req, emit)
		})
	}
}

// Concurrency lets at most n calls of each tool run at once on this
// worker; one more is answered overloaded at once (the handler does not
// run, so callers retry it on their own).
func Concurrency(n int) worker.Middleware {
	slots := &perTool[chan struct{}]{make: func() chan struct{} { return make(chan struct{}, n) }}
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			s := slots.get(req.Tool)
			select {
			case s <- struct{}{}:
				defer func() { <-s }()
			default:
				return nil, envelope.NewProblem(envelope.CodeOverloaded,
					fmt.Sprintf("tool %s already runs %d calls on this worker", req.Tool, n)).WithRetryAfter(1)
			}
			return next.Handle(ctx, req, emit)
		})
	}
}

// outcome is the code a handler's answer ends the call with ("" for a result).
func outcome(err error) envelope.Code {
	if err == nil {
		return ""
	}
	return envelope.AsProblem(err, envelope.CodeToolFailed).Code
}

// AccessLog logs one line per call at Info (Warn when it failed): tool,
// call id, duration and outcome. Arguments, results and the bearer token
// are never logged.
func AccessLog(log *slog.Logger) worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			start := time.Now()
			res, err := next.Handle(ctx, req, emit)
			callmetrics.Log(ctx, log, req.Tool, req.CallID, time.Since(start), outcome(err))
			return res, err
		})
	}
}
