package inmem

import (
	"bytes"
	"context"
	"maps"

	"github.com/runner-dev/runner/sandbox"
)

var _ sandbox.Checkpointer = (*Sandbox)(nil)

// Checkpoint keeps a copy of the workspace. See sandbox.Checkpointer.
func (s *Sandbox) Checkpoint(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.saved = s.tree.clone()
	return nil
}

// Restore puts the copy back. See sandbox.Checkpointer.
func (s *Sandbox) Restore(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if s.saved == nil {
		return sandbox.ErrNoCheckpoint
	}
	s.tree, s.saved = *s.saved, nil
	return nil
}

func (t tree) clone() *tree {
	c := tree{nodes: make(map[string]*node, len(t.nodes))}
	for p, n := range maps.All(t.nodes) {
		cp := *n
		cp.data = bytes.Clone(n.data)
		c.nodes[p] = &cp
	}
	return &c
}
