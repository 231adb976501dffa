package bench

import "testing"

// The default --concurrency measures every level the unary targets are
// set at, so a default run judges each of them.
func TestDefaultConcurrencyMeetsEveryUnaryTarget(t *testing.T) {
	def := Command(func() *Env { return nil }).Flags().Lookup("concurrency").DefValue
	levels, err := parseConcurrency("concurrency", def)
	if err != nil {
		t.Fatal(err)
	}
	judged := map[int]bool{}
	for _, n := range levels {
		if len(destructiveGoals(n)) > 0 && len(idempotentGoals(n)) > 0 {
			judged[n] = true
		}
	}
	for _, n := range []int{1, 16, 256} {
		if !judged[n] {
			t.Errorf("--concurrency defaults to %q: no unary targets judged at %d in flight", def, n)
		}
	}
	for _, g := range append(destructiveGoals(16), idempotentGoals(256)...) {
		if g.peer != peerMicro {
			t.Errorf("unary goal %v is not over micro", g)
		}
	}
}
