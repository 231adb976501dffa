package redact

import (
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

const secret = "Zq7Lm2Xw9Rt4Bn6Vc1Hk8Jp3Gf5Ds0Ay2Eu7Io4"

// leaks returns the first piece of secret at least MinFragment long in s.
func leaks(s string) string {
	for i := 0; i+MinFragment <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+MinFragment]) {
			return secret[i : i+MinFragment]
		}
	}
	return ""
}

func TestString(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"whole", "token=" + secret + ".", "token=" + Mark + "."},
		{"twice", secret + secret, Mark + Mark},
		{"prefix piece", "…" + secret[:12], "…" + Mark},
		{"suffix piece", secret[30:] + " end", Mark + " end"},
		{"short piece kept", "x" + secret[:7] + "x", "x" + secret[:7] + "x"},
		{"nothing", "hello", "hello"},
		{"empty secret", secret, secret},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := secret
			if c.name == "empty secret" {
				s = ""
			}
			if got := String(c.in, s); got != c.want {
				t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// Cutting anywhere — the tail's start or the head's end at every offset
// of the secret — leaves no piece of it.
func TestTailAndHeadCutAtEveryOffset(t *testing.T) {
	const max = 100
	for pad := 0; pad <= max+len(secret); pad++ {
		s := secret + strings.Repeat("y", pad)
		if got, _ := Tail(s, secret, max); leaks(got) != "" || len(got) > max {
			t.Fatalf("Tail with %d bytes after the secret: %q", pad, got)
		}
		s = strings.Repeat("x", pad) + secret + "zzz"
		if got, _ := Head(s, secret, max); leaks(got) != "" || len(got) > max {
			t.Fatalf("Head with %d bytes before the secret: %q", pad, got)
		}
	}
}

func TestProblem(t *testing.T) {
	p := envelope.NewProblem(envelope.CodeToolFailed, "bad token "+secret).
		WithExtension("tail", secret[5:]).
		WithExtension("nested", map[string]any{"x": []any{secret[3:20]}}).
		WithExtension("n", 3)
	q := Problem(p, secret)
	if b, _ := q.MarshalJSON(); leaks(string(b)) != "" {
		t.Fatalf("problem still holds the secret: %s", b)
	}
	if q.Extensions["n"] != 3 {
		t.Errorf("untouched extension changed: %v", q.Extensions["n"])
	}
	if !strings.Contains(p.Detail, secret) {
		t.Error("the original Problem was changed; it may be shared between calls")
	}
}

func FuzzString(f *testing.F) {
	f.Add("prefix", 3)
	f.Add(secret+secret, 0)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		if cut < 0 || cut > len(secret) {
			return
		}
		in := s + secret[:cut] + s + secret + secret[cut:]
		if got := String(in, secret); leaks(got) != "" && leaks(s) == "" {
			t.Fatalf("String(%q) = %q", in, got)
		}
	})
}
