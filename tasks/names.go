package tasks

import (
	"fmt"
	"strings"
)

// maxIDLen keeps ids usable as file names and branch components.
const maxIDLen = 100

// CheckID reports why id cannot name a task, or nil. A task id names a state
// file and the default branch agent/<id>, so it is limited to letters,
// digits, '.', '_' and '-', starts with a letter or digit, and avoids what
// git forbids in a ref ("..", a trailing "." or ".lock").
func CheckID(id string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("id %q %s", id, fmt.Sprintf(format, args...))
	}
	switch {
	case id == "":
		return fmt.Errorf("empty id")
	case len(id) > maxIDLen:
		return bad("is %d characters long, over the %d allowed", len(id), maxIDLen)
	}
	for _, r := range id {
		if r > 0x7f || !(isAlnum(byte(r)) || r == '.' || r == '_' || r == '-') {
			return bad("has the character %q; use only letters, digits, '.', '_' and '-'", r)
		}
	}
	switch {
	case !isAlnum(id[0]):
		return bad("must start with a letter or digit")
	case strings.Contains(id, ".."):
		return bad(`must not contain ".."`)
	case strings.HasSuffix(id, "."), strings.HasSuffix(id, ".lock"):
		return bad(`must not end with "." or ".lock"`)
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// CheckBranchName reports why name is not a valid branch name, or nil. It
// follows `git check-ref-format --branch` applied to refs/heads/<name>, and
// also refuses "@", which git would read as HEAD inside a repository, and a
// name starting with "refs/": git would take refs/heads/x as the branch
// refs/heads/refs/heads/x, surely not what was meant.
func CheckBranchName(name string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("branch name %q %s", name, fmt.Sprintf(format, args...))
	}
	switch {
	case name == "":
		return fmt.Errorf("empty branch name")
	case name == "HEAD", name == "@":
		return bad("is reserved by git")
	case strings.HasPrefix(name, "-"):
		return bad(`must not start with "-"`)
	case strings.HasPrefix(name, "refs/heads/"):
		return bad("names the branch by its full ref; write it as %q", strings.TrimPrefix(name, "refs/heads/"))
	case strings.HasPrefix(name, "refs/"):
		return bad(`must not start with "refs/": it would become the branch refs/heads/%s`, name)
	case strings.HasPrefix(name, "/"), strings.HasSuffix(name, "/"), strings.Contains(name, "//"):
		return bad(`must not start or end with "/" or contain "//"`)
	case strings.HasSuffix(name, "."):
		return bad(`must not end with "."`)
	case strings.Contains(name, ".."):
		return bad(`must not contain ".."`)
	case strings.Contains(name, "@{"):
		return bad(`must not contain "@{"`)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f {
			return bad("must not contain control characters")
		}
		if strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return bad("must not contain %q", c)
		}
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return bad(`must not have a component starting with "."`)
		}
		if strings.HasSuffix(part, ".lock") {
			return bad(`must not have a component ending with ".lock"`)
		}
	}
	return nil
}

// checkRef reports why ref cannot be handed to git as a revision, or nil.
func checkRef(ref string) error {
	if ref == "" {
		return fmt.Errorf("empty ref")
	}
	if strings.HasPrefix(ref, "-") {
		return fmt.Errorf("ref %q must not start with \"-\"", ref)
	}
	for _, r := range ref {
		if r <= 0x20 || r == 0x7f {
			return fmt.Errorf("ref %q must not contain spaces or control characters", ref)
		}
	}
	return nil
}

// checkEnvKey reports why key cannot name an environment variable, or nil.
func checkEnvKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty variable name")
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("variable name %q: use letters, digits and '_', not starting with a digit", key)
		}
	}
	return nil
}
