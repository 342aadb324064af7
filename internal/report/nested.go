package report

import "strings"

// depthOf is how deeply the sub-agent named id ("1", "1.2") is nested: 0
// for the task's agent, whose id is "".
func depthOf(id string) int {
	if id == "" {
		return 0
	}
	return strings.Count(id, ".") + 1
}

// markAgent marks the entries from index from on as the sub-agent's.
func (tl *Timeline) markAgent(from int, id string) {
	for i := from; i < len(tl.Entries); i++ {
		tl.Entries[i].Agent, tl.Entries[i].Depth = id, depthOf(id)
	}
}
