package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/tasks"
)

// Under deploy/secure: a tenant past its task quota (count or bytes) is
// refused with task_quota_exceeded and no task is made; the other
// tenant's quota is its own and its submits go on being accepted.
func TestSecureTaskQuotaIsPerOwner(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{MaxTasksPerOwner: 3, MaxBytesPerOwner: 8000})
	alice := m.caller(t, "alice")
	bob := m.caller(t, "bob")
	ctx := context.Background()
	for i := range 3 {
		if _, err := tasks.NewClient(alice).Submit(ctx, "demo.park", map[string]int{"i": i}); err != nil {
			t.Fatalf("alice's submit %d: %v", i+1, err)
		}
	}
	_, err := tasks.NewClient(alice).Submit(ctx, "demo.park", map[string]int{"i": 3})
	wantQuota(t, err, "tasks")
	big := map[string]string{"blob": strings.Repeat("x", 5000)}
	if _, err := tasks.NewClient(bob).Submit(ctx, "demo.park", big); err != nil {
		t.Fatalf("bob's first submit, alice being past her quota: %v", err)
	}
	_, err = tasks.NewClient(bob).Submit(ctx, "demo.park", big)
	wantQuota(t, err, "bytes")
	if _, err := tasks.NewClient(bob).Submit(ctx, "demo.park", map[string]int{"i": 1}); err != nil {
		t.Fatalf("bob's small submit within his bytes: %v", err)
	}
	// Refused submits made no task.
	for name, c := range map[string]*caller.Caller{"alice": alice, "bob": bob} {
		list, err := tasks.NewClient(c).List(ctx, "", 0)
		want := map[string]int{"alice": 3, "bob": 2}[name]
		if err != nil || len(list) != want {
			t.Errorf("%s lists %d tasks (%v), want %d", name, len(list), err, want)
		}
	}
}

// wantQuota checks that err is task_quota_exceeded for quota.
func wantQuota(t *testing.T, err error, quota string) {
	t.Helper()
	p := wantCode(t, err, envelope.CodeTaskQuotaExceeded)
	if got := fmt.Sprint(p.Extensions["quota"]); got != quota {
		t.Fatalf("quota %q, want %q: %s", got, quota, p.Detail)
	}
}

// A full task store refuses new tasks with task_quota_exceeded (quota
// "store") rather than dropping old tasks.
func TestDurableFullStoreRefusesSubmits(t *testing.T) {
	m := startDurable(t, tasks.Config{MaxStoreBytes: 128 << 10})
	ctx := context.Background()
	blob := map[string]string{"blob": strings.Repeat("x", 40<<10)}
	var ids []string
	for range 8 {
		id, err := tasks.NewClient(m.c).Submit(ctx, "nobody.hosts.this", blob)
		if err != nil {
			wantQuota(t, err, "store")
			break
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 || len(ids) == 8 {
		t.Fatalf("%d submits of 40 KiB accepted by a 128 KiB store", len(ids))
	}
	for _, id := range ids {
		if rec, err := tasks.NewClient(m.c).Get(ctx, id, false); err != nil || rec.State != tasks.Queued {
			t.Errorf("task %s: %+v, %v; want kept, queued", id, rec, err)
		}
	}
}
