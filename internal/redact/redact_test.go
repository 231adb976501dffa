package redact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

const secret = "Zq7Lm2Xw9Rt4Bn6Vc1Hk8Jp3Gf5Ds0Ay2Eu7Io4"

// envSecret is a second secret, as a binding's env value, holding
// characters JSON escapes.
const envSecret = "pg<pass>&word-0123456789"

// leaks returns the first piece of any of secrets at least MinFragment
// long in s.
func leaks(s string, secrets ...string) string {
	if len(secrets) == 0 {
		secrets = []string{secret, envSecret}
	}
	for _, sec := range secrets {
		for i := 0; i+MinFragment <= len(sec); i++ {
			if strings.Contains(s, sec[i:i+MinFragment]) {
				return sec[i : i+MinFragment]
			}
		}
	}
	return ""
}

func TestString(t *testing.T) {
	r := New(secret, envSecret, "")
	for _, c := range []struct{ name, in, want string }{
		{"whole", "token=" + secret + ".", "token=" + Mark + "."},
		{"twice", secret + secret, Mark + Mark},
		{"prefix piece", "…" + secret[:12], "…" + Mark},
		{"suffix piece", secret[30:] + " end", Mark + " end"},
		{"short piece kept", "x" + secret[:7] + "x", "x" + secret[:7] + "x"},
		{"second secret", "PGPASS=" + envSecret, "PGPASS=" + Mark},
		{"second secret piece", "…" + envSecret[9:], "…" + Mark},
		{"nothing", "hello", "hello"},
		{"url password", "dial postgres://admin:hunter2@db: refused", "dial postgres://admin:" + Mark + "@db: refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := r.String(c.in); got != c.want {
				t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	var none *Redactor
	if got := none.String(secret); got != secret {
		t.Errorf("a nil Redactor changed %q to %q", secret, got)
	}
}

func TestURLCredentials(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"dial postgres://admin:hunter2@db: refused", "dial postgres://admin:" + Mark + "@db: refused"},
		{"nats://TOKEN123@host:4222", "nats://" + Mark + "@host:4222"},
		{`get "https://u:p/a#b?c@example.com/x": eof`, `get "https://u:` + Mark + `@example.com/x": eof`},
		{"a://x:y@h b://v:w@k", "a://x:" + Mark + "@h b://v:" + Mark + "@k"},
		{"https://registry.npmjs.org/@types/node", "https://registry.npmjs.org/@types/node"},
		{"https://example.com/path", "https://example.com/path"},
		{"no url at all: a@b", "no url at all: a@b"},
		{"://user:pw@host", "://user:pw@host"},
		{"x+y.z://u:p@h", "x+y.z://u:" + Mark + "@h"},
	} {
		if got := URLCredentials(c.in); got != c.want {
			t.Errorf("URLCredentials(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := URLCredentials(URLCredentials(c.in)); got != c.want {
			t.Errorf("URLCredentials twice (%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Cutting anywhere — the tail's start or the head's end at every offset
// of each secret, or of a URL's password — leaves no piece of it.
func TestTailAndHeadCutAtEveryOffset(t *testing.T) {
	const max = 100
	r := New(secret, envSecret)
	const url = "postgres://admin:Hunter2Hunter2Hunter2@db"
	for _, sec := range []string{secret, envSecret, url} {
		for pad := 0; pad <= max+len(sec); pad++ {
			s := sec + strings.Repeat("y", pad)
			got, _ := r.Tail(s, max)
			if leaks(got, secret, envSecret, "Hunter2Hunter2Hunter2") != "" || len(got) > max {
				t.Fatalf("Tail with %d bytes after %q: %q", pad, sec, got)
			}
			s = strings.Repeat("x", pad) + sec + "zzz"
			got, _ = r.Head(s, max)
			if leaks(got, secret, envSecret, "Hunter2Hunter2Hunter2") != "" || len(got) > max {
				t.Fatalf("Head with %d bytes before %q: %q", pad, sec, got)
			}
		}
	}
}

type blocks struct {
	Text string `json:"text"`
}

func TestProblem(t *testing.T) {
	r := New(secret, envSecret)
	p := envelope.NewProblem(envelope.CodeToolFailed, "bad token "+secret).
		WithExtension("tail", secret[5:]).
		WithExtension("nested", map[string]any{"x": []any{secret[3:20]}}).
		WithExtension("content", []blocks{{Text: "PGPASS=" + envSecret}}).
		WithExtension("n", 3)
	p.CodeActions = []envelope.CodeAction{{Title: "use " + envSecret}}
	q := r.Problem(p)
	if b, _ := q.MarshalJSON(); leaks(string(b)) != "" {
		t.Fatalf("problem still holds a secret: %s", b)
	}
	if q.Extensions["n"] != 3 {
		t.Errorf("untouched extension changed: %v", q.Extensions["n"])
	}
	if !strings.Contains(p.Detail, secret) || !strings.Contains(p.CodeActions[0].Title, envSecret) {
		t.Error("the original Problem was changed; it may be shared between calls")
	}
	clean := envelope.NewProblem(envelope.CodeToolFailed, "nothing to hide").WithExtension("k", []blocks{{Text: "x"}})
	if r.Problem(clean) != clean {
		t.Error("a Problem with nothing to hide was copied")
	}
}

func TestProblemOf(t *testing.T) {
	r := New(secret)
	for _, c := range []struct {
		name string
		err  error
		is   error
	}{
		{"problem", envelope.NewProblem(envelope.CodeToolFailed, "token "+secret), nil},
		{"wrapped problem", fmt.Errorf("x: %w", envelope.NewProblem(envelope.CodeToolFailed, secret)), nil},
		{"plain error", fmt.Errorf("dial https://u:%s@h: %w", secret, context.Canceled), context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := r.ProblemOf(c.err)
			if leaks(got.Error()) != "" {
				t.Fatalf("ProblemOf(%v) = %v", c.err, got)
			}
			if c.is != nil && !errors.Is(got, c.is) {
				t.Errorf("errors.Is(%v, %v) is false after redaction", got, c.is)
			}
		})
	}
	if r.ProblemOf(nil) != nil {
		t.Error("ProblemOf(nil) is not nil")
	}
}

func TestValues(t *testing.T) {
	got := Values(map[string]string{"A": "1", "B": "en_US", "C": "secret-value", "D": ""})
	if len(got) != 1 || got[0] != "secret-value" {
		t.Errorf("Values = %q, want only the value of at least %d bytes", got, MinValue)
	}
}

func FuzzString(f *testing.F) {
	f.Add("prefix", 3)
	f.Add(secret+secret, 0)
	r := New(secret, envSecret)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		if cut < 0 || cut > len(secret) {
			return
		}
		in := s + secret[:cut] + s + secret + secret[cut:] + envSecret[:cut%len(envSecret)]
		if got := r.String(in); leaks(got) != "" && leaks(s) == "" {
			t.Fatalf("String(%q) = %q", in, got)
		}
	})
}
