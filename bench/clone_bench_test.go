package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/runner-dev/runner/gitops"
)

// BenchmarkClone clones a fixture repository by path and by file:// URL,
// with gitops.Clone and with the git CLI, in full and shallow (depth 1,
// which `runner run` asks for every task), each against `git clone` of the
// same URL with the same --depth (which git ignores for a plain path: it
// links the object store instead). Goal: runner within 2x of git.
func BenchmarkClone(b *testing.B) {
	for _, files := range []int{1000, 10000} {
		src := fixtureRepo(b, files)
		for _, u := range []struct {
			name, url string
			depth     int
		}{
			{"path", src, 0},
			{"path-depth1", src, 1},
			{"file", "file://" + src, 0},
			{"file-depth1", "file://" + src, 1},
		} {
			runImpls(b, fmt.Sprintf("files=%d/url=%s/", files, u.name),
				impl{"git-cli", func(b *testing.B) {
					args := []string{"clone", "-q"}
					if u.depth > 0 {
						args = append(args, fmt.Sprintf("--depth=%d", u.depth))
					}
					cloneLoop(b, func(dir string) error {
						out, err := exec.Command("git", append(args, u.url, dir)...).CombinedOutput()
						if err != nil {
							return fmt.Errorf("git clone: %w: %s", err, out)
						}
						return nil
					})
				}},
				impl{"runner", func(b *testing.B) {
					cloneLoop(b, func(dir string) error {
						_, err := gitops.Clone(context.Background(), gitops.CloneOptions{URL: u.url, Dir: dir, Depth: u.depth})
						return err
					})
				}},
			)
		}
	}
}

// cloneLoop times clone into a fresh directory per iteration, and removes
// each clone outside the timing.
func cloneLoop(b *testing.B, clone func(dir string) error) {
	parent := b.TempDir()
	i := 0
	for b.Loop() {
		dir := filepath.Join(parent, fmt.Sprint(i))
		i++
		if err := clone(dir); err != nil {
			b.Fatal(err)
		}
		untimed(b, func() {
			if err := os.RemoveAll(dir); err != nil {
				b.Fatal(err)
			}
			settle()
		})
	}
}
