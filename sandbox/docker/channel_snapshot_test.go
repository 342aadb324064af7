package docker_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
	"github.com/runner-dev/runner/sandbox/sandboxtest"
)

// workspaceOfEveryKind makes, as the agent could, an entry of every kind a
// snapshot holds: files plain, executable, setuid, empty and large;
// directories empty, deep and unreadable; symlinks in and out of the
// workspace; a hard link; a named pipe; names with spaces and unicode.
const workspaceOfEveryKind = `set -e
mkdir -p src/deep empty locked 'ünï cødé'
printf 'package a\n' > src/a.go
printf '#!/bin/sh\n' > run.sh && chmod 755 run.sh
printf 'x' > suid && chmod 4755 suid
: > zero
seq 1 60000 > src/deep/big
ln -s src/a.go link
ln -s /etc/passwd out
ln src/a.go hard
mkfifo pipe
echo kept > locked/f
echo shut > shut
printf 'ü' > 'ünï cødé/f 1'
chmod 000 shut locked/f locked`

// describeSnapshot is sandboxtest.DescribeSnapshot.
func describeSnapshot(t *testing.T, sb sandbox.Sandbox) string {
	t.Helper()
	return sandboxtest.DescribeSnapshot(t, sb)
}

// paused reports whether the engine shows the container paused.
func paused(t *testing.T, sb *docker.Sandbox) string {
	t.Helper()
	out, err := dockerCLI(t, "inspect", "-f", "{{.State.Paused}}", sb.ID())
	if err != nil {
		t.Fatalf("docker inspect: %v: %s", err, out)
	}
	return out
}

// The snapshot the helper takes holds, entry for entry, what the engine's
// archive of the paused sandbox holds (the reference, which commits have
// always been made from), for a workspace with every kind of entry; and
// the helper leaves the modes it had to change to read as they were, so a
// second snapshot is the same.
func TestChannelSnapshotMatchesArchive(t *testing.T) {
	viaChannel := startChannel(t, sandbox.Config{})
	viaArchive := start(t, sandbox.Config{})
	output(t, viaChannel, workspaceOfEveryKind)
	output(t, viaArchive, workspaceOfEveryKind)
	got := describeSnapshot(t, viaChannel)
	if p := paused(t, viaChannel); p != "false" {
		t.Fatalf("the channel's sandbox is paused (%s): the snapshot was not the helper's", p)
	}
	want := describeSnapshot(t, viaArchive)
	if p := paused(t, viaArchive); p != "true" {
		t.Fatalf("the exec sandbox's snapshot did not pause it (%s)", p)
	}
	if got != want {
		t.Errorf("through the channel:\n%s\n\nthe engine's archive:\n%s", got, want)
	}
	if again := describeSnapshot(t, viaChannel); again != got {
		t.Errorf("a second snapshot through the channel differs:\n%s\n\nfirst:\n%s", again, got)
	}
}

// A fork loop and a writer run when the snapshot is taken: the helper
// stops every one of their processes before it copies (each is shown
// stopped by /proc, read as root by the engine's exec, the independent
// reader), and the file the writer appends to is whole in the snapshot.
func TestChannelSnapshotFreezesTheSandbox(t *testing.T) {
	sb := startChannel(t, sandbox.Config{Pids: 64})
	output(t, sb, `(while :; do echo line >> grow; done) >/dev/null 2>&1 &
(f() { f & f & wait; }; f) >/dev/null 2>&1 &
until [ -s grow ]; do :; done; echo started`)
	desc := describeSnapshot(t, sb)
	if !strings.Contains(desc, "./grow 0 644 1000:1000 ") {
		t.Fatalf("the writer's file is not in the snapshot:\n%s", desc)
	}
	if p := paused(t, sb); p != "false" {
		t.Fatalf("the sandbox is paused (%s): the snapshot was not the helper's", p)
	}
	helper := fmt.Sprint(sb.ChannelPID())
	states, err := dockerCLI(t, "exec", "-u", "0", sb.ID(), "sh", "-c",
		// Builtins only: the stopped fork loop holds every process slot.
		`for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] || [ "$p" = `+helper+` ] || [ "$p" = $$ ] && continue; { read -r s < $d/stat; } 2>/dev/null || continue; s=${s##*) }; echo "$p ${s%% *}"; done`)
	if err != nil {
		t.Fatalf("read the processes: %v: %s", err, states)
	}
	lines := strings.Split(states, "\n")
	if len(lines) < 3 {
		t.Fatalf("want the writer and the fork loop's processes, found:\n%s", states)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) != 2 || f[1] != "T" && f[1] != "Z" {
			t.Errorf("process not stopped after the snapshot: %q (all:\n%s)", l, states)
		}
	}
	rc, err := sb.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no ./grow in the second snapshot: %v", err)
		}
		if h.Name != "./grow" {
			continue
		}
		body, _ := io.ReadAll(tr)
		if len(body) == 0 || strings.Trim(string(body), "line\n") != "" || !strings.HasSuffix(string(body), "line\n") {
			t.Errorf("./grow is not whole lines: %d bytes, ends %q", len(body), body[max(0, len(body)-20):])
		}
		break
	}
}

// A file of another user that the sandbox user cannot read (root's, put
// there through the engine's archive API) is not the helper's to copy: the
// snapshot falls back to pausing the sandbox and copying it out as root,
// and holds the file.
func TestChannelSnapshotFallsBackToTheArchive(t *testing.T) {
	sb := startChannel(t, sandbox.Config{})
	output(t, sb, "echo mine > mine")
	secret := filepath.Join(t.TempDir(), "rootfile")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := dockerCLI(t, "cp", secret, sb.ID()+":/workspace/rootfile"); err != nil {
		t.Fatalf("docker cp: %v: %s", err, out)
	}
	if out := output(t, sb, "cat rootfile 2>&1; stat -c '%u %a' rootfile"); !strings.Contains(out, "Permission denied") || !strings.HasSuffix(out, "0 600") {
		t.Fatalf("the sandbox user reads root's file, or it is not root's: %q", out)
	}
	desc := describeSnapshot(t, sb)
	for _, want := range []string{`./rootfile 0 600 0:0 "secret\n"`, `./mine 0 644 1000:1000 "mine\n"`} {
		if !strings.Contains(desc, want) {
			t.Errorf("snapshot lacks %q:\n%s", want, desc)
		}
	}
	if p := paused(t, sb); p != "true" {
		t.Errorf("the sandbox is not paused (%s): the snapshot did not fall back to the archive", p)
	}
}
