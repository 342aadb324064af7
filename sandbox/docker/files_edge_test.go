package docker_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// Files that are not plain files, or not reachable, get the package's
// errors, at once, and a refused write changes nothing.
func TestFileEdgeCases(t *testing.T) {
	for _, img := range fileImages {
		t.Run(img.name, func(t *testing.T) {
			sb := start(t, sandbox.Config{Image: img.image(t)})
			ctx := context.Background()
			output(t, sb, `mkfifo fifo && ln -s /dev/zero zero-link && ln -s /tmp/nowhere dangling-out && ln -s missing dangling-in &&
				truncate -s 100G huge && mkdir ro && chmod 555 ro && echo keep > ro-file && chmod 444 ro-file && echo x > plain`)
			read := func(p string) func() error {
				return func() error { _, err := sb.ReadFile(ctx, p); return err }
			}
			write := func(p string) func() error {
				return func() error { return sb.WriteFile(ctx, p, []byte("new\n"), 0) }
			}
			tests := []struct {
				name string
				op   func() error
				want error
				msg  string
			}{
				{"read a FIFO", read("fifo"), sandbox.ErrNotRegular, "fifo"},
				{"write a FIFO", write("fifo"), sandbox.ErrNotRegular, "fifo"},
				{"read a device through a symlink", read("zero-link"), sandbox.ErrOutsideWorkspace, "/dev/zero"},
				{"write a device through a symlink", write("zero-link"), sandbox.ErrOutsideWorkspace, "/dev/zero"},
				{"read a device", read("/dev/zero"), sandbox.ErrOutsideWorkspace, "/dev/zero"},
				{"read a huge sparse file", read("huge"), sandbox.ErrTooLarge, "107374182400 bytes"},
				{"read a dangling symlink", read("dangling-in"), sandbox.ErrNotFound, "dangling-in"},
				{"write through a dangling symlink out", write("dangling-out"), sandbox.ErrOutsideWorkspace, "/tmp/nowhere"},
				{"write into a read-only directory", write("ro/new"), fs.ErrPermission, "ro/new"},
				{"write below a read-only directory", write("ro/sub/new"), fs.ErrPermission, "ro/sub/new"},
				{"write a read-only file", write("ro-file"), fs.ErrPermission, "ro-file"},
				{"write below a file", write("plain/x"), sandbox.ErrNotDir, "plain/x"},
				{"read below a file", read("plain/x"), sandbox.ErrNotFound, "plain/x"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					begin := time.Now()
					err := tt.op()
					if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
						t.Errorf("got %v, want %v mentioning %q", err, tt.want, tt.msg)
					}
					if took := time.Since(begin); took > 10*time.Second {
						t.Errorf("took %s", took)
					}
				})
			}
			got := output(t, sb, "ls /tmp; ls ro; cat ro-file; stat -c %s huge")
			if got != "keep\n107374182400" {
				t.Errorf("after the refused operations: %q, want nothing in /tmp or ro, ro-file and huge unchanged", got)
			}
			// A dangling symlink that stays inside is written through: its
			// target is created.
			if err := sb.WriteFile(ctx, "dangling-in", []byte("made\n"), 0); err != nil {
				t.Fatalf("write through a dangling symlink inside: %v", err)
			}
			if got := output(t, sb, "cat missing; [ -L dangling-in ] && echo still a link"); got != "made\nstill a link" {
				t.Errorf("after writing through dangling-in: %q", got)
			}
			// An empty write makes an empty file.
			if err := sb.WriteFile(ctx, "empty", nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := output(t, sb, "stat -c '%s %a' empty"); got != "0 600" {
				t.Errorf("empty file: %q", got)
			}
		})
	}
}

// A file that a process of the sandbox keeps creating and removing is read
// whole or not found, never in part and never as another error.
func TestFileRemovedMidRead(t *testing.T) {
	sb := start(t, sandbox.Config{})
	ctx := context.Background()
	body := strings.Repeat("0123456789abcdef", 4096)
	if err := sb.WriteFile(ctx, "src", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	output(t, sb, "(while :; do cp src g.new && mv g.new g && rm g; done) >/dev/null 2>&1 & echo $! > /tmp/churn.pid")
	defer output(t, sb, "kill $(cat /tmp/churn.pid)")
	var whole, missing int
	for i := range 60 {
		got, err := sb.ReadFile(ctx, "g")
		switch {
		case err == nil && string(got) == body:
			whole++
		case errors.Is(err, sandbox.ErrNotFound):
			missing++
		case err == nil:
			t.Fatalf("read %d returned %d bytes, not the %d of the file", i, len(got), len(body))
		default:
			t.Fatalf("read %d: %v, want the content or ErrNotFound", i, err)
		}
	}
	t.Logf("%d whole, %d not found", whole, missing)
}

// A FIFO swapped in between the helper's type check and its open blocks
// the open; the host's deadline for the operation then ends it, with an
// error saying so, and kills the helper: nothing is left running.
func TestFileFIFOSwappedInTimesOut(t *testing.T) {
	docker.SetFileOpTimeout(t, 2*time.Second)
	swapper := swapperBinary(t)
	sb := start(t, sandbox.Config{})
	ctx := context.Background()
	output(t, sb, "echo data > f && mkfifo p")
	stop := startSwapper(t, sb, swapper, "f", "p")
	var read, notRegular, timedOut int
	for i := 0; i < 400 && timedOut < 2; i++ {
		got, err := sb.ReadFile(ctx, "f")
		switch {
		case err == nil && string(got) == "data\n":
			read++
		case err != nil && strings.Contains(err.Error(), "did not finish within 2s"):
			if !errors.Is(err, sandbox.ErrNotRegular) {
				t.Errorf("a timed out read: %v, want ErrNotRegular", err)
			}
			timedOut++
		case errors.Is(err, sandbox.ErrNotRegular):
			notRegular++
		default:
			t.Fatalf("read %d: %q, %v", i, got, err)
		}
	}
	t.Logf("%s; %d read, %d not regular, %d timed out", stop(), read, notRegular, timedOut)
	if timedOut == 0 {
		t.Errorf("no read was caught by the FIFO in 400 tries: the deadline went untested")
	}
	if ps := output(t, sb, "ps -o args | grep runner-files | grep -v grep || true"); ps != "" {
		t.Errorf("file helpers left running:\n%s", ps)
	}
}
