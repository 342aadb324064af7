package gitops

// IsGitPath reports whether any component of the slash-separated path p
// would be taken for a .git directory by git on some file system (see
// isDotGit): what a copy of a workspace leaves out, as a commit does.
func IsGitPath(p string) bool { return inDotGit(p) }
