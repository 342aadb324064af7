package sandboxtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// workspaceState lists every entry of the workspace with its type, mode,
// size and time, symlink targets, and the content of every file.
// A symlink's own time is left out: cp -a cannot always set it, and git
// keeps no time at all. Every list is sorted: gVisor lists a directory in
// another order once its entries were recreated.
const workspaceState = `find . ! -type l -exec ls -ld {} + | sort -k9; find . -type l -exec sh -c 'for l; do echo "link $l -> $(readlink "$l")"; done' x {} + | sort; find . -type f | sort | while read -r f; do echo "== $f"; cat "$f"; done`

// testCheckpoint runs what a check might do to the workspace
// between Checkpoint and Restore: change, remove and add files (dotfiles,
// names starting with "..", caches), change modes, turn a file into a
// directory, leave a directory it cannot write to; and asserts that the
// workspace reads back exactly as before.
func testCheckpoint(t *testing.T, tg Target) {
	dir := t.TempDir()
	for name, body := range map[string]string{"app.py": "print(1)\n", "pkg/mod.py": "x = 1\n", ".env.example": "A=1\n", "notes/a.txt": "a\n"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	started := tg.start(t, sandbox.Config{Workspace: dir})
	sb, ok := started.(sandbox.Checkpointer)
	if !ok {
		t.Skip("the backend's sandboxes do not set the workspace aside (sandbox.Checkpointer)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	output(t, started, "ln -s app.py link && mkdir -p ro && echo k > ro/keep && chmod 555 ro && touch -d '2020-01-02 03:04' notes/a.txt")
	before := output(t, started, workspaceState)

	if err := sb.Checkpoint(ctx); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	output(t, started, `echo changed > app.py && rm pkg/mod.py && chmod 600 run.sh && rm link && ln -s run.sh link &&
mkdir -p __pycache__ pkg/__pycache__ .pytest_cache/v && echo b > __pycache__/app.pyc && echo c > pkg/__pycache__/mod.pyc &&
echo d > .pytest_cache/v/ids && echo e > ..odd && echo f > .hidden && rm notes/a.txt && mkdir notes/a.txt &&
mkdir locked && echo g > locked/f && chmod 500 locked && echo h >> ro/../app.py`)
	if err := sb.Restore(ctx); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if after := output(t, started, workspaceState); after != before {
		t.Errorf("workspace after Restore:\n%s\nwant as before Checkpoint:\n%s", after, before)
	}
	if out := output(t, started, "ls -a /tmp"); out != ".\n.." {
		t.Errorf("/tmp after Restore holds %q, want the checkpoint gone", out)
	}
	if err := sb.Restore(ctx); !errors.Is(err, sandbox.ErrNoCheckpoint) {
		t.Errorf("second Restore: err = %v, want ErrNoCheckpoint", err)
	}

	// A command that destroys the checkpoint leaves the workspace as it
	// made it, and Restore says so.
	if err := sb.Checkpoint(ctx); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	output(t, started, "echo by-product > out.log && chmod -R u+w /tmp/.runner-checkpoint && rm -rf /tmp/.runner-checkpoint")
	if err := sb.Restore(ctx); !errors.Is(err, sandbox.ErrNoCheckpoint) {
		t.Errorf("Restore without its checkpoint: err = %v, want ErrNoCheckpoint", err)
	}
	if got := output(t, started, "cat out.log app.py"); got != "by-product\nprint(1)" {
		t.Errorf("workspace after a refused Restore: %q", got)
	}
}
