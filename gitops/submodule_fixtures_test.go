package gitops

import (
	"strings"
	"testing"
)

// submoduleTreeFixtures change the directory of a submodule, which
// `git clone` leaves empty.
var submoduleTreeFixtures = []treeFixture{
	{
		name: "submodules-deleted-replaced-emptied",
		base: map[string]file{
			"main.go": {content: "m\n"},
			".gitmodules": {content: "[submodule \"m1\"]\n\tpath = m1\n\turl = https://example.com/m1.git\n" +
				"[submodule \"m2\"]\n\tpath = m2\n\turl = https://example.com/m2.git\n"},
		},
		setup: func(t *testing.T, repo string) {
			for i, p := range []string{"m1", "m2", "m3", "m4", "m5", "deep/m6"} {
				gitRun(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat(string(rune('a'+i)), 40)+","+p)
			}
		},
		change: func(t *testing.T, dir string) {
			remove(t, dir, "m1", "m2", "m3", "deep")
			writeFiles(t, dir, map[string]file{
				"m2":           {content: "now a file\n"},
				"m3":           {link: "main.go"},
				"m4/inside.go": {content: "not committed\n"},
			})
			// m5 stays the empty directory the clone left.
		},
	},
}
