package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClaimShard(t *testing.T) {
	open := func(t *testing.T, dir string) *Store {
		t.Helper()
		s, err := OpenStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	rec := func(i, n int) *ShardRecord {
		return &ShardRecord{Index: i, Count: n, QueueDigest: "d", Queue: []string{"a", "b"}}
	}
	dir := filepath.Join(t.TempDir(), "out")
	s := open(t, dir)
	if err := s.ClaimShard(rec(1, 3)); err != nil {
		t.Fatal(err)
	}
	got, err := ReadShardRecord(dir)
	if err != nil || got == nil || got.Shard() != "1/3" || got.QueueDigest != "d" {
		t.Fatalf("ReadShardRecord = %+v, %v; want shard 1/3", got, err)
	}
	if err := s.ClaimShard(rec(1, 3)); err != nil {
		t.Errorf("the same shard again: %v", err)
	}
	for _, tt := range []struct {
		rec  *ShardRecord
		want string
	}{
		{rec(2, 3), "holds shard 1/3, not 2/3"},
		{rec(1, 4), "holds shard 1/3, not 1/4"},
		{nil, "holds shard 1/3 of a sharded run; run with --shard 1/3"},
	} {
		err := s.ClaimShard(tt.rec)
		if !errors.Is(err, ErrShardMismatch) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("ClaimShard(%v) = %v; want ErrShardMismatch saying %q", tt.rec, err, tt.want)
		}
	}

	// An unsharded run's results are not a shard's.
	plain := filepath.Join(t.TempDir(), "plain")
	ps := open(t, plain)
	if err := ps.ClaimShard(nil); err != nil {
		t.Fatal(err)
	}
	if err := ps.Record(Result{ID: "a", Status: StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if err := ps.ClaimShard(rec(0, 2)); !errors.Is(err, ErrShardMismatch) || !strings.Contains(err.Error(), "unsharded run") {
		t.Errorf("shard in an unsharded run's out directory: %v", err)
	}

	// Nothing runs in a merge's directory.
	merged := filepath.Join(t.TempDir(), "merged")
	os.MkdirAll(merged, 0o755)
	os.WriteFile(filepath.Join(merged, MergeFile), []byte("{}\n"), 0o644)
	ms := open(t, merged)
	for _, r := range []*ShardRecord{nil, rec(0, 2)} {
		if err := ms.ClaimShard(r); !errors.Is(err, ErrShardMismatch) || !strings.Contains(err.Error(), "runner merge") {
			t.Errorf("run in a merge's directory: %v", err)
		}
	}
}

func TestQueueDigest(t *testing.T) {
	q := []Task{{ID: "a", Prompt: "x"}, {ID: "b", Prompt: "y"}}
	d := QueueDigest(q)
	if QueueDigest([]Task{{ID: "a", Prompt: "x"}, {ID: "b", Prompt: "y"}}) != d {
		t.Error("the same queue has another digest")
	}
	for _, other := range [][]Task{
		{{ID: "a", Prompt: "x"}},
		{{ID: "b", Prompt: "y"}, {ID: "a", Prompt: "x"}},
		{{ID: "a", Prompt: "x"}, {ID: "b", Prompt: "z"}},
	} {
		if QueueDigest(other) == d {
			t.Errorf("queue %v has the digest of %v", other, q)
		}
	}
}
