package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/tasks"
)

// fakeShard writes the out directory of shard i of n with the results.
func fakeShard(t *testing.T, dir string, i, n int, digest string, results ...tasks.Result) {
	t.Helper()
	recordResults(t, dir, results...)
	rec := tasks.ShardRecord{Index: i, Count: n, QueueDigest: digest, Queue: []string{"a", "b", "c"}}
	data, _ := json.Marshal(rec)
	writeFile(t, filepath.Join(dir, tasks.ShardFile), string(data))
}

func TestMergeRefusals(t *testing.T) {
	base := t.TempDir()
	dir := func(name string) string { return filepath.Join(base, name) }
	ok := tasks.Result{ID: "a", Status: tasks.StatusSucceeded}
	fakeShard(t, dir("s0"), 0, 3, "q", ok)
	fakeShard(t, dir("s1"), 1, 3, "q", tasks.Result{ID: "b", Status: tasks.StatusSucceeded})
	fakeShard(t, dir("s2"), 2, 3, "q")
	fakeShard(t, dir("other-n"), 1, 2, "q")
	fakeShard(t, dir("other-queue"), 1, 3, "r")
	fakeShard(t, dir("same-shard"), 1, 3, "q")
	fakeShard(t, dir("overlap"), 2, 3, "q", tasks.Result{ID: "a", Status: tasks.StatusCheckFailed})
	recordResults(t, dir("plain"), ok)
	os.MkdirAll(dir("busy"), 0o755)
	writeFile(t, filepath.Join(dir("busy"), "notes.txt"), "mine")

	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing shard", []string{"--out", dir("m"), dir("s0"), dir("s1")}, []string{"1 shard of 3 missing: 2/3", "--partial"}},
		{"different N", []string{"--out", dir("m"), dir("s0"), dir("other-n")}, []string{dir("s0"), dir("other-n"), "split 3 ways in one and 2"}},
		{"different queue", []string{"--out", dir("m"), dir("s0"), dir("other-queue")}, []string{dir("s0"), dir("other-queue"), "different queues"}},
		{"shard twice", []string{"--out", dir("m"), dir("s1"), dir("same-shard")}, []string{dir("s1"), dir("same-shard"), "both hold shard 1/3"}},
		{"dir twice", []string{"--out", dir("m"), dir("s1"), dir("s1")}, []string{"named twice"}},
		{"overlap", []string{"--out", dir("m"), dir("s0"), dir("s1"), dir("overlap")}, []string{`task "a"`, dir("s0"), dir("overlap"), "differ"}},
		{"not a shard", []string{"--out", dir("m"), dir("s0"), dir("plain")}, []string{dir("plain"), "has no shard.json"}},
		{"into a shard", []string{"--out", dir("s2"), dir("s0"), dir("s1")}, []string{"not written by runner merge"}},
		{"into an input", []string{"--out", dir("s0"), dir("s0"), dir("s1"), dir("s2")}, []string{"not written by runner merge"}},
		{"into a busy directory", []string{"--out", dir("busy"), dir("s0"), dir("s1"), dir("s2")}, []string{"not written by runner merge"}},
		{"no --out", []string{dir("s0")}, []string{"--out"}},
	} {
		res := runMain(t, append([]string{"merge"}, tt.args...)...)
		if res.code != cli.ExitUsage {
			t.Errorf("%s: exit code %d, want %d\n%s", tt.name, res.code, cli.ExitUsage, res)
		}
		for _, w := range tt.want {
			if !strings.Contains(res.stderr, w) {
				t.Errorf("%s: stderr does not say %q:\n%s", tt.name, w, res.stderr)
			}
		}
	}
	if fileExists(dir("m")) {
		t.Error("a refused merge left its output")
	}
	if got, _ := os.ReadFile(filepath.Join(dir("busy"), "notes.txt")); string(got) != "mine" {
		t.Error("a refused merge touched the directory it was given")
	}

	// --partial merges what is there; the same results in two shards
	// count once.
	fakeShard(t, dir("same"), 2, 3, "q", ok)
	res := runMain(t, "merge", "--partial", "--out", dir("m"), dir("s0"), dir("same"))
	if res.code != cli.ExitOK || !strings.Contains(res.stderr, "1/3") {
		t.Fatalf("merge --partial:\n%s", res)
	}
	if got := readResultLines(t, dir("m")); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("merged results %+v, want a's line once", got)
	}
	before := snapshotOf(t, dir("m"))
	res = runMain(t, "continue", "--out", dir("m"), "a")
	if res.code != cli.ExitUsage || !strings.Contains(res.stderr, "runner merge") {
		t.Errorf("continue in a merged directory:\n%s", res)
	}
	if !mapsEqual(before, snapshotOf(t, dir("m"))) {
		t.Error("a refused continue changed the merged directory")
	}
}
