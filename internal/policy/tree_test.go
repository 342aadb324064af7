package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree builds a tree from "path" (a file), "path -> target" (a symlink)
// and "path @" (a submodule).
func tree(specs ...string) map[string]Entry {
	t := map[string]Entry{}
	for _, s := range specs {
		switch p, target, ok := strings.Cut(s, " -> "); {
		case ok:
			t[p] = Entry{Kind: Symlink, Target: target}
		case strings.HasSuffix(s, " @"):
			t[strings.TrimSuffix(s, " @")] = Entry{Kind: Gitlink}
		default:
			t[s] = Entry{Kind: File}
		}
	}
	return t
}

// exposures lists "path [shown] (placed)" for each exposed path, sorted.
func exposures(m map[string]Exposure) []string {
	var out []string
	for p, e := range m {
		s := p
		if e.Shown != "" {
			s += " as " + e.Shown
		}
		if e.Placed {
			s += " (placed)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func TestExposed(t *testing.T) {
	tests := []struct {
		name string
		tree map[string]Entry
		want []string
	}{
		{"plain tree", tree("README.md", ".github/workflows/ci.yml", "docs/CODEOWNERS", ".github/ISSUE_TEMPLATE/bug.md"),
			[]string{".github/workflows/ci.yml", "docs/CODEOWNERS"}},
		{"workflows linked to a directory holding CI files", tree(".github/workflows -> ../ci", "ci/x.yml", "README.md"),
			[]string{".github/workflows (placed)", "ci/x.yml as .github/workflows/x.yml"}},
		{".github linked outside the tree", tree(".github -> /tmp/evil", "README.md"),
			[]string{".github (placed)"}},
		{".github linked to a missing directory", tree(".github -> nowhere", "README.md"),
			[]string{".github (placed)"}},
		{".circleci linked", tree(".circleci -> shared", "shared/config.yml"),
			[]string{".circleci (placed)", "shared/config.yml as .circleci/config.yml"}},
		{".github linked, case changed", tree(".GitHub -> x", "x/workflows/ci.yml"),
			[]string{".GitHub (placed)", "x/workflows/ci.yml as .GitHub/workflows/ci.yml"}},
		{"a directory linked to one holding CODEOWNERS", tree("docs -> templates", "templates/CODEOWNERS", "src/main.go"),
			[]string{"docs as docs/CODEOWNERS", "templates/CODEOWNERS"}},
		{"deeper", tree("docs -> templates", "templates/a/b/CODEOWNERS"),
			[]string{"docs as docs/a/b/CODEOWNERS", "templates/a/b/CODEOWNERS"}},
		{"a directory linked to one without protected paths", tree("docs -> src", "src/main.go", "lib -> ../outside"), nil},
		{"a symlink named CODEOWNERS", tree("CODEOWNERS -> README.md", "README.md"),
			[]string{"CODEOWNERS", "README.md as CODEOWNERS"}},
		{"a symlink to a protected directory from elsewhere", tree("l1 -> l2", "l2 -> .github", ".github/workflows/ci.yml"),
			[]string{".github/workflows/ci.yml"}},
		{"a chain of symlinks into the workflows", tree(".github/workflows -> ../l1", "l1 -> l2", "l2 -> ci", "ci/x.yml"),
			[]string{".github/workflows (placed)", "ci/x.yml as .github/workflows/x.yml"}},
		{"a file symlink into the workflows", tree(".github/workflows/ci.yml -> ../../build.yml", "build.yml"),
			[]string{".github/workflows/ci.yml", "build.yml as .github/workflows/ci.yml"}},
		{"through a parent directory", tree(".github/workflows -> ../ci/../ci2/.", "ci/a", "ci2/b.yml"),
			[]string{".github/workflows (placed)", "ci2/b.yml as .github/workflows/b.yml"}},
		{"backslashes in the target", tree("docs -> templates\\sub", "templates/sub/CODEOWNERS"),
			[]string{"docs as docs/CODEOWNERS", "templates/sub/CODEOWNERS"}},
		{"a submodule where workflows could be", tree(".github @", "README.md"),
			[]string{".github (placed)"}},
		{"loops", tree("a -> .", "b -> .", "c -> c", "d -> e", "e -> d", "CODEOWNERS", "x/y -> .."),
			[]string{"CODEOWNERS", "a as a/CODEOWNERS", "b as b/CODEOWNERS", "x/y as x/y/CODEOWNERS"}},
		{"a symlink below a file", tree("docs -> README.md/x", "README.md", "CODEOWNERS"), []string{"CODEOWNERS"}},
	}
	p := NewProtection(DefaultProtected)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Exposed(context.Background(), tt.tree)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(exposures(got), tt.want) {
				t.Errorf("Exposed =\n  %q\nwant\n  %q", exposures(got), tt.want)
			}
			checkOnDisk(t, tt.tree, got)
		})
	}
}

// checkOnDisk lays the tree out with real symlinks and checks that each
// exposure's Shown path opens the exposed entry: the walk resolves as the
// file system does.
func checkOnDisk(t *testing.T, tr map[string]Entry, got map[string]Exposure) {
	t.Helper()
	root := t.TempDir()
	for p, e := range tr {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case File:
			err := os.WriteFile(full, []byte(p), 0o644)
			if err != nil {
				t.Fatal(err)
			}
		case Gitlink:
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
		case Symlink:
			if strings.Contains(e.Target, `\`) || strings.HasPrefix(e.Target, "/") {
				return // not portable to a Linux file system
			}
			if err := os.Symlink(e.Target, full); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p, e := range got {
		if e.Shown == "" || tr[p].Kind == Symlink {
			continue
		}
		want, err1 := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		shown, err2 := os.Stat(filepath.Join(root, filepath.FromSlash(e.Shown)))
		if err1 != nil || err2 != nil || !os.SameFile(want, shown) {
			t.Errorf("on disk, %s does not open %s (%v, %v)", e.Shown, p, err1, err2)
		}
	}
}

// Symlinks that loop in every way, in a large tree, are walked in time
// proportional to the tree, and the walk stops when its context ends.
func TestExposedLoopsAndCancel(t *testing.T) {
	tr := tree("CODEOWNERS")
	for i := range 30 {
		up := "."
		if i > 0 {
			up = strings.TrimSuffix(strings.Repeat("../", i), "/")
		}
		tr[strings.Repeat("d/", i)+"up"] = Entry{Kind: Symlink, Target: up}
		tr[strings.Repeat("d/", i)+"self"] = Entry{Kind: Symlink, Target: "."}
		tr[strings.Repeat("d/", i)+"f"] = Entry{Kind: File}
	}
	got, err := NewProtection(DefaultProtected).Exposed(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["d/d/up"]; !ok {
		t.Errorf("d/d/up, through which the root's CODEOWNERS shows, is not exposed: %q", exposures(got))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewProtection(DefaultProtected).Exposed(ctx, tr); !errors.Is(err, context.Canceled) {
		t.Errorf("Exposed with a cancelled context: err = %v", err)
	}
}
