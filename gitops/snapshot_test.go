package gitops

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCommitTreeRefusesHostileSnapshots feeds hand-written tar streams and
// checks that each is refused as a whole, naming every offending path,
// with no branch created and no object written.
func TestCommitTreeRefusesHostileSnapshots(t *testing.T) {
	ok := entry{name: "./fine.txt", body: "fine"}
	tests := []struct {
		name      string
		entries   []entry
		opts      CommitOptions
		wantPaths []string
		wantWhy   string
	}{
		{"absolute path", []entry{ok, {name: "/etc/passwd", body: "x"}}, CommitOptions{}, []string{"/etc/passwd"}, "absolute path"},
		{"absolute after dot slash", []entry{{name: ".//etc/cron", body: "x"}}, CommitOptions{}, []string{".//etc/cron"}, "absolute path"},
		{"parent component", []entry{{name: "../escape.txt", body: "x"}}, CommitOptions{}, []string{"../escape.txt"}, "parent directory component"},
		{"parent component inside", []entry{{name: "./a/../../b", body: "x"}}, CommitOptions{}, []string{"./a/../../b"}, "parent directory component"},
		{"hard link", []entry{ok, {name: "./hl", typeflag: tar.TypeLink, link: "./fine.txt"}}, CommitOptions{}, []string{"./hl"}, "hard link"},
		{"char device", []entry{{name: "./null", typeflag: tar.TypeChar}}, CommitOptions{}, []string{"./null"}, "device node"},
		{"block device", []entry{{name: "./sda", typeflag: tar.TypeBlock}}, CommitOptions{}, []string{"./sda"}, "device node"},
		{"fifo", []entry{{name: "./pipe", typeflag: tar.TypeFifo}}, CommitOptions{}, []string{"./pipe"}, "named pipe"},
		{"file over size limit", []entry{ok, {name: "./big", body: "0123456789A"}}, CommitOptions{MaxFileSize: 10}, []string{"./big"}, "exceeds the 10-byte limit"},
		{"too many entries", []entry{{name: "a", body: "1"}, {name: "b", body: "2"}, {name: "c", body: "3"}, {name: "d", body: "4"}}, CommitOptions{MaxEntries: 3}, []string{"d"}, "more than 3 entries"},
		{"file under symlink", []entry{{name: "./link", typeflag: tar.TypeSymlink, link: "/etc"}, {name: "./link/passwd", body: "x"}}, CommitOptions{}, []string{"./link/passwd"}, `inside symlink "link"`},
		{"file under file", []entry{{name: "./f", body: "x"}, {name: "./f/g", body: "y"}}, CommitOptions{}, []string{"./f/g"}, `inside file "f"`},
		{"duplicate", []entry{{name: "./d.txt", body: "1"}, {name: "d.txt", body: "2"}}, CommitOptions{}, []string{"d.txt"}, "duplicate entry"},
		{"symlinked gitmodules", []entry{{name: "./.gitmodules", typeflag: tar.TypeSymlink, link: "/etc/passwd"}}, CommitOptions{}, []string{"./.gitmodules"}, "symlinked .gitmodules"},
		{"empty symlink", []entry{{name: "./s", typeflag: tar.TypeSymlink}}, CommitOptions{}, []string{"./s"}, "symlink without a target"},
		{"non-canonical", []entry{{name: "./a//b", body: "x"}, {name: "./c/./d", body: "y"}}, CommitOptions{}, []string{"./a//b", "./c/./d"}, "non-canonical path"},
		{"root not a directory", []entry{{name: ".", body: "x"}}, CommitOptions{}, []string{"."}, "workspace root is not a directory"},
		{"several at once", []entry{{name: "/abs", body: "x"}, ok, {name: "../up", body: "y"}, {name: "./dev", typeflag: tar.TypeChar}}, CommitOptions{}, []string{"/abs", "../up", "./dev"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
			before := objectFiles(t, repo)
			state := stateOf(t, repo)
			opts := tt.opts
			opts.Branch = "runner/hostile"
			_, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarOf(t, tt.entries...)), opts)
			var unsafe *UnsafeSnapshotError
			if !errors.As(err, &unsafe) {
				t.Fatalf("err = %v, want *UnsafeSnapshotError", err)
			}
			if !errors.Is(err, ErrUnsafeSnapshot) {
				t.Errorf("errors.Is(err, ErrUnsafeSnapshot) = false")
			}
			if got := unsafe.Paths(); !slices.Equal(got, tt.wantPaths) {
				t.Errorf("paths = %q, want %q", got, tt.wantPaths)
			}
			for _, p := range tt.wantPaths {
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", p)) {
					t.Errorf("message %q does not name %q", err, p)
				}
			}
			if !strings.Contains(err.Error(), tt.wantWhy) {
				t.Errorf("message %q does not say %q", err, tt.wantWhy)
			}
			if branchExists(repo, "runner/hostile") {
				t.Error("branch created for a refused snapshot")
			}
			if after := objectFiles(t, repo); !slices.Equal(after, before) {
				t.Errorf("objects written for a refused snapshot: before %v, after %v", before, after)
			}
			assertStateUnchanged(t, repo, state)
		})
	}
}

func TestUnsafeSnapshotErrorCapsTheList(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	var entries []entry
	for i := range 30 {
		entries = append(entries, entry{name: fmt.Sprintf("/abs/%02d", i), body: "x"})
	}
	_, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarOf(t, entries...)), CommitOptions{Branch: "runner/cap"})
	var unsafe *UnsafeSnapshotError
	if !errors.As(err, &unsafe) {
		t.Fatalf("err = %v, want *UnsafeSnapshotError", err)
	}
	if len(unsafe.Entries) != 20 || unsafe.Total != 30 {
		t.Errorf("listed %d of %d, want 20 of 30", len(unsafe.Entries), unsafe.Total)
	}
	if unsafe.Entries[19].Path != "/abs/19" {
		t.Errorf("last listed = %q, want the 20th offending entry /abs/19", unsafe.Entries[19].Path)
	}
	if !strings.HasSuffix(err.Error(), "and 10 more") {
		t.Errorf("message %q does not end with the count of unlisted entries", err)
	}
}

// TestCommitTreeNeverImportsDotGit checks that every spelling git would
// take for a .git directory, at any depth, is dropped, while look-alikes
// that are ordinary names are kept.
func TestCommitTreeNeverImportsDotGit(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	snap := tarOf(t,
		entry{name: "./", typeflag: tar.TypeDir, mode: 0o755},
		entry{name: "./.git/", typeflag: tar.TypeDir, mode: 0o755},
		entry{name: "./.git/config", body: "[core]\n\thooksPath = /tmp/evil\n"},
		entry{name: "./.git/hooks/post-checkout", body: "#!/bin/sh\nevil\n", mode: 0o755},
		entry{name: "./.GIT/HEAD", body: "ref: refs/heads/main\n"},
		entry{name: "sub/.git/HEAD", body: "x"},
		entry{name: "./sub/.Git", body: "gitdir: /etc"},
		entry{name: "./a/.git", typeflag: tar.TypeSymlink, link: "/"},
		entry{name: "./git~1/config", body: "x"},
		entry{name: "./.git./config", body: "x"},
		entry{name: "./.git /config", body: "x"},
		entry{name: "./.gi\u200ct/config", body: "x"},
		entry{name: "./b\\.git", body: "x"},
		entry{name: "./.git/objects/hl", typeflag: tar.TypeLink, link: "./a.txt"},
		entry{name: "./a.txt", body: "a\n"},
		entry{name: "./sub/real.txt", body: "r"},
		entry{name: "./.gitignore", body: "*.o\n"},
		entry{name: "./.gitmodules", body: ""},
		entry{name: "./.github/workflows/ci.yml", body: "on: push\n"},
		entry{name: "./x.git", body: "x"},
		entry{name: "./.gitx", body: "x"},
	)
	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "runner/dotgit"})
	if err != nil {
		t.Fatalf("CommitTree: %v", err)
	}
	got := gitRun(t, repo, "ls-tree", "-r", "--name-only", res.Hash.String())
	// sub holds a .git of its own: a nested repository, left out whole
	// (TestCommitTreeNestedRepositories).
	want := ".github/workflows/ci.yml\n.gitignore\n.gitmodules\n.gitx\na.txt\nx.git"
	if got != want {
		t.Errorf("tree paths:\n%s\nwant:\n%s", got, want)
	}
	fsckStrict(t, repo)
}

func TestCommitTreeAcceptsNamesWithoutDotSlash(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	snap := tarOf(t,
		entry{name: "a.txt", body: "a\n"},
		entry{name: "dir/", typeflag: tar.TypeDir, mode: 0o755},
		entry{name: "dir/x.sh", body: "x", mode: 0o700},
		entry{name: "dir/l", typeflag: tar.TypeSymlink, link: "x.sh"},
	)
	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "runner/plain"})
	if err != nil {
		t.Fatal(err)
	}
	got := gitRun(t, repo, "ls-tree", "-r", res.Hash.String())
	want := "100644 blob 78981922613b2afb6025042ff6bd878ac1994e85\ta.txt\n" +
		"120000 blob " + gitHashObject(t, repo, "x.sh") + "\tdir/l\n" +
		"100755 blob " + gitHashObject(t, repo, "x") + "\tdir/x.sh"
	if got != want {
		t.Errorf("ls-tree:\n%s\nwant:\n%s", got, want)
	}
}

func gitHashObject(t *testing.T, dir, content string) string {
	t.Helper()
	out, err := gitWithStdin(dir, content, "hash-object", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCommitTreeRejectsMalformedTar(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	full := tarOf(t, entry{name: "./b.txt", body: strings.Repeat("b", 2000)})
	_, err := CommitTree(context.Background(), repo, base, bytes.NewReader(full[:700]), CommitOptions{Branch: "runner/bad"})
	if err == nil {
		t.Fatal("truncated tar accepted")
	}
	if errors.Is(err, ErrUnsafeSnapshot) {
		t.Errorf("truncated stream reported as unsafe content: %v", err)
	}
	if branchExists(repo, "runner/bad") {
		t.Error("branch created from a truncated stream")
	}
}

func TestEntryPath(t *testing.T) {
	tests := []struct {
		name, want, reason string
	}{
		{"./", "", ""},
		{".", "", ""},
		{"./src/main.go", "src/main.go", ""},
		{"src/main.go", "src/main.go", ""},
		{"./src/", "src", ""},
		{"/etc/passwd", "", "absolute path"},
		{"../x", "", "parent directory component"},
		{"a/..", "", "parent directory component"},
		{"a//b", "", "non-canonical path"},
		{"./a/./b", "", "non-canonical path"},
		{"..foo/bar..", "..foo/bar..", ""},
	}
	for _, tt := range tests {
		got, reason := entryPath(tt.name)
		if got != tt.want || reason != tt.reason {
			t.Errorf("entryPath(%q) = %q, %q; want %q, %q", tt.name, got, reason, tt.want, tt.reason)
		}
	}
}

func TestIsDotGit(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{".git", true}, {".GIT", true}, {".Git", true}, {".git.", true}, {".git ", true},
		{".git...", true}, {"git~1", true}, {"GIT~1", true}, {".git::$INDEX_ALLOCATION", true},
		{".g\u200cit", true}, {"\ufeff.git", true}, {`a\.git`, true},
		{".gitignore", false}, {".github", false}, {"git", false}, {"x.git", false}, {".gitx", false}, {"git~2", false},
	}
	for _, tt := range tests {
		if got := isDotGit(tt.name); got != tt.want {
			t.Errorf("isDotGit(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
