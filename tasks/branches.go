package tasks

import (
	"fmt"
	"strings"
)

// branchSet holds the branches of a file's tasks and finds those git
// cannot hold together: the same branch twice, or a branch that is a
// directory of another (agent/a and agent/a/b), since git keeps each branch
// as a file under refs/heads (or as a line of packed-refs that obeys the
// same rule).
type branchSet struct {
	exact map[string]claimed
	// below maps each proper prefix of a branch ("agent", "agent/a" for
	// agent/a/b) to the first task whose branch lies below it.
	below map[string]claimed
}

// claimed is a branch and the task that holds it.
type claimed struct {
	branch string
	task   *spec
}

func newBranchSet() *branchSet {
	return &branchSet{exact: map[string]claimed{}, below: map[string]claimed{}}
}

// claim records the branch of s, or explains why it collides with the
// branch of an earlier task (and then records nothing).
func (b *branchSet) claim(branch string, s *spec) string {
	if other, ok := b.exact[branch]; ok {
		return fmt.Sprintf("branch %q is also the branch of task %q (line %d)", branch, *other.task.ID, other.task.node.Line)
	}
	if other, ok := b.below[branch]; ok {
		return collision(branch, other)
	}
	for i := strings.IndexByte(branch, '/'); i >= 0; i = nextSlash(branch, i) {
		if other, ok := b.exact[branch[:i]]; ok {
			return collision(branch, other)
		}
	}
	b.exact[branch] = claimed{branch, s}
	for i := strings.IndexByte(branch, '/'); i >= 0; i = nextSlash(branch, i) {
		if _, ok := b.below[branch[:i]]; !ok {
			b.below[branch[:i]] = claimed{branch, s}
		}
	}
	return ""
}

func collision(branch string, other claimed) string {
	parent, child := branch, other.branch
	if len(parent) > len(child) {
		parent, child = child, parent
	}
	return fmt.Sprintf("branch %q collides with branch %q of task %q (line %d): git cannot hold both a branch %q and a branch below it such as %q",
		branch, other.branch, *other.task.ID, other.task.node.Line, parent, child)
}

// nextSlash returns the index of the next '/' of s after i, or -1.
func nextSlash(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
