package tasks

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitAcceptsBranch asks the git CLI, run outside any repository so that no
// @{-N} expansion applies, whether name is a valid branch name.
func gitAcceptsBranch(t *testing.T, dir, name string) bool {
	t.Helper()
	cmd := exec.Command("git", "check-ref-format", "--branch", name)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("run git: %v", err)
	}
	if err != nil && !strings.Contains(string(out), "not a valid branch name") {
		t.Fatalf("git check-ref-format %q: unexpected output %q", name, out)
	}
	return err == nil
}

func TestCheckBranchNameAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git CLI is needed as the reference: %v", err)
	}
	dir := t.TempDir()
	names := []string{
		// valid
		"agent/fix-typo", "a", "a.b", "v1.0", "foo./bar", "café", "@@", "a@b", "x/y/z",
		"heads/HEAD", "a-", "_x", "a{b}", "a+b=c!d#e", "HEADS", "x.locked",
		// invalid
		"", "a..b", "..", ".", "a b", "a\tb", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", `a\b`,
		"a\x01b", "a\x7fb", "-x", "/x", "x/", "a//b", "x.lock", "x.lock/y", "x/y.lock",
		"x/.y", ".x", "a/./b", "x.", "x/y.", "a@{b", "@{-1}", "HEAD", "feature..x",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			err := CheckBranchName(name)
			want := gitAcceptsBranch(t, dir, name)
			if got := err == nil; got != want {
				t.Errorf("CheckBranchName(%q) = %v; git accepts it: %v", name, err, want)
			}
		})
	}
}

// Names git accepts but misreads are refused: "@" is valid outside a
// repository but means HEAD inside one; refs/heads/x would become the
// branch refs/heads/refs/heads/x.
func TestCheckBranchNameRefusesWhatGitMisreads(t *testing.T) {
	for _, name := range []string{"@", "refs/heads/x", "refs/tags/v1", "refs/x"} {
		if err := CheckBranchName(name); err == nil {
			t.Errorf(`CheckBranchName(%q) = nil, want an error`, name)
		}
	}
}

func TestCheckID(t *testing.T) {
	tests := []struct {
		id   string
		want string // "" for valid
	}{
		{"fix-typo", ""},
		{"Issue_42.v2", ""},
		{"9lives", ""},
		{"", "empty id"},
		{"-x", `id "-x" must start with a letter or digit`},
		{".hidden", `id ".hidden" must start with a letter or digit`},
		{"a..b", `id "a..b" must not contain ".."`},
		{"a.", `id "a." must not end with "." or ".lock"`},
		{"a.lock", `id "a.lock" must not end with "." or ".lock"`},
		{"a/b", `id "a/b" has the character '/'; use only letters, digits, '.', '_' and '-'`},
		{"a b", `id "a b" has the character ' '; use only letters, digits, '.', '_' and '-'`},
		{strings.Repeat("x", 101), `id "` + strings.Repeat("x", 101) + `" is 101 characters long, over the 100 allowed`},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		err := CheckID(tt.id)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("CheckID(%q) = %q, want %q", tt.id, got, tt.want)
		}
		// Every valid id gives a valid default branch.
		if err == nil && !gitAcceptsBranch(t, dir, "agent/"+tt.id) {
			t.Errorf("id %q is valid but git refuses the branch agent/%s", tt.id, tt.id)
		}
	}
}

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"512m", 512 << 20, false},
		{"2g", 2 << 30, false},
		{"2G", 2 << 30, false},
		{"2GB", 2 << 30, false},
		{"2GiB", 2 << 30, false},
		{"1.5g", 3 << 29, false},
		{"64k", 64 << 10, false},
		{"1t", 1 << 40, false},
		{"1048576", 1 << 20, false},
		{"100b", 100, false},
		{"2 g", 2 << 30, false},
		{"2 gigs", 0, true},
		{"-1g", 0, true},
		{"g", 0, true},
		{"", 0, true},
		{"1e3m", 0, true},
		{"99999999999t", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseMemory(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"id", "repo", "prompt", "prompt_file", "check_retries", "budget_usd", "timeout"}
	tests := []struct{ in, want string }{
		{"promt", "prompt"},
		{"Prompt", "prompt"},
		{"repos", "repo"},
		{"timout", "timeout"},
		{"prompt-file", "prompt_file"},
		{"budget", "budget_usd"},
		{"retries", "check_retries"},
		{"colour", ""},
		{"x", ""},
		{"rpeo", "repo"},
		{"modle", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, known); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3},
		{"promt", "prompt", 1}, {"flaw", "lawn", 2}, {"é", "e", 1},
	}
	for _, tt := range tests {
		if got := levenshtein(tt.a, tt.b); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestIsRemoteAndShouldPush(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		repo      string
		push      *bool
		remote    bool
		succeeded bool
		want      bool
	}{
		{"https://h/r.git", nil, true, true, true},
		{"https://h/r.git", nil, true, false, false},
		{"git@h:r.git", nil, true, true, true},
		{"file:///srv/r.git", nil, true, true, true},
		{"/src/app", nil, false, true, false},
		{"./a:b", nil, false, true, false},
		{"/src/app", &yes, false, true, false},       // a local repository holds the branch already
		{"https://h/r.git", &yes, true, false, true}, // push: true pushes partial work too
		{"https://h/r.git", &no, true, true, false},
	}
	for _, tt := range tests {
		if got := IsRemote(tt.repo); got != tt.remote {
			t.Errorf("IsRemote(%q) = %v, want %v", tt.repo, got, tt.remote)
		}
		task := Task{Repo: tt.repo, Push: tt.push}
		if got := task.ShouldPush(tt.succeeded); got != tt.want {
			t.Errorf("ShouldPush(repo %q, push %v, succeeded %v) = %v, want %v", tt.repo, tt.push, tt.succeeded, got, tt.want)
		}
	}
}
