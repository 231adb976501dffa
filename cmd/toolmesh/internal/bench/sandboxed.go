package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/toolmesh/toolmesh/internal/sandbox"
)

// bwrapBinary is bubblewrap, the sandboxed row's peer: what operators
// already trust to confine a program and then exec it.
const bwrapBinary = "/usr/bin/bwrap"

// peerBwrap names the sandboxed row's bubblewrap peer.
const peerBwrap = "bwrap"

// hasBwrap says whether the sandboxed row can have its bubblewrap peer.
func hasBwrap() bool {
	_, err := os.Stat(bwrapBinary)
	return err == nil
}

// sandboxedVersus is the sandboxed row's peer beside raw: the same
// program through the mesh, confined by bubblewrap instead (none when
// bwrap is not installed).
func sandboxedVersus() []versusCall {
	if !hasBwrap() {
		return nil
	}
	return []versusCall{{peerBwrap, "bwrap confining the same program (the same grants, new user, PID, mount, IPC and network namespaces) through the mesh without a sandbox", (*bencher).meshSpawnBwrap}}
}

// sandboxedGoals are the sandboxed row's target: no slower than bwrap
// confining the same program in the same rounds (none without bwrap: the
// row then only reports the sandbox's cost over the unconfined program).
func sandboxedGoals() []benchGoal {
	if !hasBwrap() {
		return nil
	}
	return []benchGoal{{metric: metricP50, peer: peerBwrap, atMost: true, bound: 1}}
}

// bwrapArgs confine program as benchSandbox does, as far as bubblewrap
// can: the same files visible (the program, its loader and libraries,
// the devices and /usr/share, read-only), no network, its own PID, IPC
// and user namespaces, ending with its parent. (bubblewrap sets no
// resource limits and no Landlock rules: it does less than the sandbox.)
func bwrapArgs(program string) ([]string, error) {
	plan, err := sandbox.Prepare(&sandbox.Policy{Read: []string{"/usr/share"}}, program, "")
	if err != nil {
		return nil, err
	}
	args := []string{"--unshare-all", "--die-with-parent", "--proc", "/proc"}
	for _, p := range append(append(plan.Auto, "/usr/share", "/etc/ld.so.cache", "/dev/random", "/dev/urandom"), program) {
		args = append(args, "--ro-bind-try", p, p)
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full"} {
		args = append(args, "--dev-bind", p, p)
	}
	return append(args, program), nil
}

// sandboxedTools are the sandboxed rows' tools, in the tools file's
// shape: true.sandboxed (benchSandbox) and, with bwrap installed,
// true.bwrap (bwrapArgs, itself unconfined by the mesh).
func sandboxedTools(trueBin string) ([]byte, error) {
	tools := fmt.Appendf(nil, "  - name: true.sandboxed\n    sandbox: %s\n    binding:\n      cli:\n        cmd: %s\n        output_format: lines\n",
		benchSandbox, strconv.Quote(trueBin))
	if !hasBwrap() {
		return tools, nil
	}
	args, err := bwrapArgs(trueBin)
	if err != nil {
		return nil, err
	}
	quoted, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(tools, "  - name: true.bwrap\n    binding:\n      cli:\n        cmd: %s\n        args: %s\n        output_format: lines\n",
		bwrapBinary, quoted), nil
}

// meshSpawnBwrap runs /bin/true through the mesh's CLI binding, confined
// by bubblewrap (bwrapArgs).
func (b *bencher) meshSpawnBwrap(ctx context.Context) error {
	_, err := b.c.Call(ctx, "true.bwrap", json.RawMessage(`{}`))
	return err
}
