package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Names, in an out directory, of the records of a sharded run.
const (
	// ShardFile records which shard of which queue a sharded run's out
	// directory holds (see ShardRecord).
	ShardFile = "shard.json"
	// MergeFile marks the out directory written by `runner merge`: it
	// lists the shards merged there.
	MergeFile = "merge.json"
)

// ErrShardMismatch: an out directory holds another shard, another
// split, or an unsharded run, than the run that opens it.
var ErrShardMismatch = errors.New("out directory holds another shard")

// ShardRecord is the content of shard.json: the shard of a queue split N
// ways that the out directory holds, and the identity of that queue.
type ShardRecord struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// QueueDigest identifies the whole queue (see QueueDigest): shards of
	// one queue all record the same digest.
	QueueDigest string `json:"queue_digest"`
	// Queue lists the ids of the whole queue, in queue order, so that a
	// merge can show the tasks of every shard in that order.
	Queue []string `json:"queue"`
}

// Shard names the shard as --shard does: "1/3".
func (r ShardRecord) Shard() string { return fmt.Sprintf("%d/%d", r.Index, r.Count) }

// QueueDigest is the SHA-256, in hex, of what makes the tasks of a queue
// the same tasks: each one's id, repository, ref, branch and prompt, in
// queue order.
func QueueDigest(queue []Task) string {
	type ident struct {
		ID, Repo, Ref, Branch, Prompt string
	}
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, t := range queue {
		enc.Encode(ident{t.ID, t.Repo, t.Ref, t.Branch, t.Prompt})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadShardRecord reads the shard record of out directory dir; nil, nil
// when it has none.
func ReadShardRecord(dir string) (*ShardRecord, error) {
	data, err := os.ReadFile(filepath.Join(dir, ShardFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ShardFile, err)
	}
	var r ShardRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Count < 1 || r.Index < 0 || r.Index >= r.Count {
		return nil, fmt.Errorf("%s cannot be read: want a shard index below its count", filepath.Join(dir, ShardFile))
	}
	return &r, nil
}

// ClaimShard checks, with the out directory locked, that the run about
// to write there holds what it holds, and records it: shard rec, or an
// unsharded run when rec is nil. It refuses (ErrShardMismatch) another
// shard or another N than the one recorded, a sharded run where an
// unsharded one left results, an unsharded run in a shard's directory,
// and any run in the directory `runner merge` wrote. The record of a
// rerun of the same shard is replaced: the queue may have grown.
func (s *Store) ClaimShard(rec *ShardRecord) error {
	if _, err := os.Stat(filepath.Join(s.dir, MergeFile)); err == nil {
		return fmt.Errorf("%w: %s holds the merged results of shards (runner merge); run in each shard's own out directory", ErrShardMismatch, s.dir)
	}
	have, err := ReadShardRecord(s.dir)
	if err != nil {
		return err
	}
	switch {
	case have == nil && rec == nil:
		return nil
	case have != nil && rec == nil:
		return fmt.Errorf("%w: %s holds shard %s of a sharded run; run with --shard %s, or choose another out directory",
			ErrShardMismatch, s.dir, have.Shard(), have.Shard())
	case have == nil && len(s.Results()) > 0:
		return fmt.Errorf("%w: %s holds the results of an unsharded run; give shard %s its own out directory",
			ErrShardMismatch, s.dir, rec.Shard())
	case have != nil && (have.Index != rec.Index || have.Count != rec.Count):
		return fmt.Errorf("%w: %s holds shard %s, not %s; give each shard its own out directory",
			ErrShardMismatch, s.dir, have.Shard(), rec.Shard())
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("record shard: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(s.dir, ShardFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("record shard: %w", err)
	}
	return nil
}
