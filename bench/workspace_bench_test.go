package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// workspaceSizes are the repository sizes of the workspace benchmarks: a
// small repository, then about 1k, 10k and 50k files.
var workspaceSizes = []int{100, 1000, 10000, 50000}

// workspaces gives each fixture size one clone, made on first use by the
// git CLI, that the benchmarks copy into sandboxes. The clones live as long
// as the parent benchmark.
type workspaces struct {
	parent *testing.B
	mu     sync.Mutex
	dirs   map[int]string
}

func newWorkspaces(parent *testing.B) *workspaces {
	return &workspaces{parent: parent, dirs: map[int]string{}}
}

// get returns the clone of the fixture of files files; b is the benchmark
// asking, which fails if the clone cannot be made.
func (w *workspaces) get(b *testing.B, files int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d, ok := w.dirs[files]; ok {
		return d
	}
	d := filepath.Join(w.parent.TempDir(), "ws")
	mustGit(b, "", "clone", "-q", fixtureRepo(b, files), d)
	w.dirs[files] = d
	return d
}

// BenchmarkSandboxReady times a sandbox from nothing to running with the
// workspace copied in: runner's Engine.Start (create, copy in, start)
// against `docker run -d` and `docker cp` of the same directory. files=0 is
// an empty workspace (runner) and no copy at all (docker-cli): the fixed
// cost. Goal: runner within 1.0x of the CLI.
func BenchmarkSandboxReady(b *testing.B) {
	e := dockertest.Engine(b)
	image := dockertest.Busybox(b)
	cleanBaselines(b)
	ws := newWorkspaces(b)
	for _, files := range append([]int{0}, workspaceSizes...) {
		dir := func(b *testing.B) string {
			if files == 0 {
				return ""
			}
			return ws.get(b, files)
		}
		runImpls(b, fmt.Sprintf("files=%d/", files),
			impl{"docker-cli", func(b *testing.B) {
				dir := dir(b)
				for b.Loop() {
					id := mustDocker(b, baselineRun(image)...)
					if dir != "" {
						mustDocker(b, "cp", dir+"/.", id+":"+sandbox.Workdir)
					}
					untimed(b, func() {
						mustDocker(b, "rm", "-f", "-v", id)
						settle()
					})
				}
				perFile(b, files)
			}},
			impl{"runner", func(b *testing.B) {
				dir := dir(b)
				ctx := context.Background()
				for b.Loop() {
					sb, err := e.StartContainer(ctx, sandbox.Config{Image: image, Workspace: dir, RunID: dockertest.RunID, TaskID: "bench-ready"})
					if err != nil {
						b.Fatal(err)
					}
					untimed(b, func() {
						if err := sb.Close(ctx); err != nil {
							b.Fatal(err)
						}
						settle()
					})
				}
				perFile(b, files)
			}},
		)
	}
}

// BenchmarkCopyOut times copying the workspace out of a running sandbox:
// runner's Snapshot (which pauses the container first) read to its end,
// against `docker cp` to a directory, which a user's script needs in order
// to commit, and `docker cp` to a tar stream on stdout, which is the same
// work as Snapshot. The CLI copies from one running sandbox; runner's side
// gets a fresh one, started untimed, per copy, since Snapshot leaves it
// paused. Goal: runner within 1.0x of the CLI.
func BenchmarkCopyOut(b *testing.B) {
	e := dockertest.Engine(b)
	image := dockertest.Busybox(b)
	ws := newWorkspaces(b)
	ctx := context.Background()
	for _, files := range workspaceSizes {
		var once sync.Once
		var sb *docker.Sandbox
		running := func(b *testing.B) *docker.Sandbox {
			once.Do(func() {
				var err error
				sb, err = e.StartContainer(ctx, sandbox.Config{Image: image, Workspace: ws.get(b, files), RunID: dockertest.RunID, TaskID: "bench-copyout"})
				if err != nil {
					b.Fatal(err)
				}
			})
			return sb
		}
		b.Cleanup(func() {
			if sb != nil {
				sb.Close(ctx)
			}
		})
		runImpls(b, fmt.Sprintf("files=%d/", files),
			impl{"docker-cli", func(b *testing.B) {
				parent := b.TempDir()
				i := 0
				for b.Loop() {
					var id string
					dst := filepath.Join(parent, strconv.Itoa(i))
					i++
					untimed(b, func() { id = running(b).ID() })
					mustDocker(b, "cp", id+":"+sandbox.Workdir+"/.", dst)
					untimed(b, func() {
						if err := os.RemoveAll(dst); err != nil {
							b.Fatal(err)
						}
						settle()
					})
				}
				perFile(b, files)
			}},
			impl{"docker-cli-tar", func(b *testing.B) {
				for b.Loop() {
					var id string
					untimed(b, func() { id = running(b).ID() })
					cmd := exec.Command("docker", "cp", id+":"+sandbox.Workdir+"/.", "-")
					var stderr strings.Builder
					cmd.Stdout, cmd.Stderr = io.Discard, &stderr
					if err := cmd.Run(); err != nil {
						b.Fatalf("docker cp: %v: %s", err, stderr.String())
					}
				}
				perFile(b, files)
			}},
			impl{"runner", func(b *testing.B) {
				for b.Loop() {
					// A sandbox of its own each time: Snapshot pauses it,
					// and the timing must include that.
					var s *docker.Sandbox
					untimed(b, func() {
						var err error
						s, err = e.StartContainer(ctx, sandbox.Config{Image: image, Workspace: ws.get(b, files), RunID: dockertest.RunID, TaskID: "bench-copyout"})
						if err != nil {
							b.Fatal(err)
						}
						settle()
					})
					rc, err := s.Snapshot(ctx)
					if err != nil {
						b.Fatal(err)
					}
					n, err := io.Copy(io.Discard, rc)
					rc.Close()
					if err != nil || n < int64(files)*200 {
						b.Fatalf("snapshot: %d bytes, err %v", n, err)
					}
					untimed(b, func() {
						if err := s.Close(ctx); err != nil {
							b.Fatal(err)
						}
						settle()
					})
				}
				perFile(b, files)
			}},
		)
	}
}

// agentWork is what the benchmarks' "agent" does to a workspace: it
// appends a line to one file in a hundred and adds ten files.
const agentWork = `find pkg* -type f | sort | awk 'NR % 100 == 1' | while read -r f; do echo changed >> "$f"; done
mkdir -p added && for i in 0 1 2 3 4 5 6 7 8 9; do echo "new $i" > added/new$i.txt; done`

// changedFiles is how many paths agentWork changes in a fixture of files files.
func changedFiles(files int) int { return (files+99)/100 + 10 }

// BenchmarkCommit times recording the agent's work as a commit, from the
// snapshot of a sandbox where agentWork ran: runner's CommitTree, which
// reads the tar stream and writes objects and a branch into a copy of the
// user's repository, against `git add -A && git commit` in a clone over
// which the same snapshot was extracted (as `docker cp` out leaves it).
// Goal: runner within 1.5x of git.
func BenchmarkCommit(b *testing.B) {
	e := dockertest.Engine(b)
	image := dockertest.Busybox(b)
	ws := newWorkspaces(b)
	ctx := context.Background()
	tmp := b.TempDir()
	for _, files := range workspaceSizes {
		var once sync.Once
		var snap string
		var base plumbing.Hash
		var gitTree, runnerTree string
		prepare := func(b *testing.B) {
			once.Do(func() {
				snap = filepath.Join(tmp, fmt.Sprintf("snapshot-%d.tar", files))
				base = snapshotAfterWork(b, e, image, ws.get(b, files), snap)
			})
		}
		runImpls(b, fmt.Sprintf("files=%d/", files),
			impl{"git-cli", func(b *testing.B) {
				prepare(b)
				work := filepath.Join(b.TempDir(), "work")
				for b.Loop() {
					untimed(b, func() {
						if err := os.RemoveAll(work); err != nil {
							b.Fatal(err)
						}
						extract(b, snap, work)
						settle()
					})
					mustGit(b, work, "add", "-A")
					mustGit(b, work, "commit", "-q", "-m", "agent work")
				}
				b.StopTimer()
				if got := len(strings.Fields(mustGit(b, work, "diff", "--name-only", "HEAD~", "HEAD"))); got != changedFiles(files) {
					b.Fatalf("git commit changed %d files, want %d", got, changedFiles(files))
				}
				gitTree = mustGit(b, work, "rev-parse", "HEAD^{tree}")
			}},
			impl{"runner", func(b *testing.B) {
				prepare(b)
				b.ReportAllocs()
				parent := b.TempDir()
				i := 0
				for b.Loop() {
					repo := filepath.Join(parent, strconv.Itoa(i))
					i++
					var f *os.File
					untimed(b, func() {
						// A fresh copy of the user's repository each time, so
						// that no iteration finds the objects of the one before.
						mustRun(b, "cp", "-a", filepath.Join(fixtureRepo(b, files), ".git"), repo)
						var err error
						if f, err = os.Open(snap); err != nil {
							b.Fatal(err)
						}
						settle()
					})
					res, err := gitops.CommitTree(ctx, repo, base, f, gitops.CommitOptions{Branch: "agent/bench"})
					f.Close()
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Changes) != changedFiles(files) {
						b.Fatalf("CommitTree changed %d files, want %d", len(res.Changes), changedFiles(files))
					}
					runnerTree = res.Tree.String()
					untimed(b, func() {
						if err := os.RemoveAll(repo); err != nil {
							b.Fatal(err)
						}
						settle()
					})
				}
				perFile(b, files)
			}},
		)
		if gitTree != "" && runnerTree != "" && gitTree != runnerTree {
			b.Fatalf("files=%d: runner's tree %s differs from git's %s", files, runnerTree, gitTree)
		}
	}
}

// snapshotAfterWork copies dir into a sandbox, runs agentWork there and
// writes the sandbox's snapshot to the file path. It returns the commit the
// workspace was cloned at.
func snapshotAfterWork(b *testing.B, e *docker.Engine, image, dir, path string) plumbing.Hash {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, err := e.StartContainer(ctx, sandbox.Config{Image: image, Workspace: dir, RunID: dockertest.RunID, TaskID: "bench-commit"})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close(ctx)
	res, err := sb.Exec(ctx, agentWork, sandbox.ExecOptions{Timeout: 5 * time.Minute})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("agent work: %+v, %v", res, err)
	}
	rc, err := sb.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return plumbing.NewHash(mustGit(b, dir, "rev-parse", "HEAD"))
}

// extract unpacks a snapshot into dir as `docker cp` out would, owned by
// this user.
func extract(b *testing.B, tarFile, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	mustRun(b, "tar", "--no-same-owner", "-xf", tarFile, "-C", dir)
}

// mustRun runs a command and ends the benchmark on failure.
func mustRun(tb testing.TB, name string, args ...string) {
	tb.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}
