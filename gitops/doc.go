// Package gitops is the only part of runner that touches git.
//
// It clones a task's repository into a private workspace (Clone): a shallow
// clone of a repository on this machine, named by a plain path, reads the
// source's object store directly and copies only the objects of the
// requested history (clone_local.go); anything else goes through go-git's
// transports. It turns the tar snapshot of the agent's workspace into a
// commit on a new branch of the user's repository (CommitTree), publishes
// that branch (Push) and removes it again (Rollback).
//
// The user's repository is treated as read-only apart from two things: new
// objects in its object store and the branch named by the caller. Its HEAD,
// index, worktree and config are never written, so a rollback is nothing
// more than deleting the branch.
//
// The snapshot is hostile input. It is parsed in-process with archive/tar,
// never extracted to disk, and the agent's .git directory is never imported.
package gitops
