package agent

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// assignCallIDs gives an id to each call of msg that the server sent
// without one, or with one that an earlier call of history or of msg
// already has, and returns the ids it gave. A tool result answers its call
// by id, so a call without a unique id could not be answered.
//
// A generated id is "r" and eight lower-case letters and digits: the step
// in base 36 and the call's place in the reply. It is stable (the same
// reply at the same step gets the same ids, so a replay matches its
// trajectory), and its shape suits the strictest server known: Mistral
// wants exactly nine letters and digits.
func assignCallIDs(history []Message, msg *Message, step int) []string {
	if len(msg.ToolCalls) == 0 {
		return nil
	}
	used := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			used[c.ID] = true
		}
	}
	var generated []string
	for i := range msg.ToolCalls {
		c := &msg.ToolCalls[i]
		if c.ID != "" && !used[c.ID] {
			used[c.ID] = true
			continue
		}
		for n := 0; ; n++ {
			id := "r" + base36(int64(step), 5) + base36(int64(i+n*len(msg.ToolCalls)), 3)
			if !used[id] {
				c.ID = id
				break
			}
		}
		used[c.ID] = true
		generated = append(generated, c.ID)
	}
	return generated
}

// base36 writes n in base 36, left-padded with zeros to width digits, or
// its last width digits when it is longer.
func base36(n int64, width int) string {
	s := strconv.FormatInt(max(n, 0), 36)
	if len(s) > width {
		return s[len(s)-width:]
	}
	return strings.Repeat("0", width-len(s)) + s
}

// wireCallID is the id a call is sent under: its own, or, for a server
// that takes only nine letters and digits, one derived from it (the same
// for a call and its result, and for every request).
func wireCallID(id string, rules wireRules) string {
	if !rules.shortCallIDs || isShortID(id) {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return "h" + base36(int64(h.Sum64()>>1), 8)
}

func isShortID(id string) bool {
	if len(id) != 9 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !(id[i] >= 'a' && id[i] <= 'z' || id[i] >= 'A' && id[i] <= 'Z' || id[i] >= '0' && id[i] <= '9') {
			return false
		}
	}
	return true
}
