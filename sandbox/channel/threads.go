package channel

import (
	"runtime"
	"sync"
)

// spareThreads is how many OS threads the helper starts with and keeps.
// The helper runs in the sandbox's process limit, which the agent can use
// up (a fork loop); the Go runtime ends the program when it cannot create
// a thread it needs, and it needs one for each request blocked in a system
// call (a command's wait, a read of the channel). Threads it made once it
// keeps, idle, for later: made at the start, before the agent runs
// anything, they let the helper serve a few commands at once (and time out
// a fork loop's) without asking the kernel for another. They count in the
// sandbox's process limit.
const spareThreads = 12

// reserveThreads makes the runtime create n threads now: n goroutines,
// each wired to a thread of its own, wait until all are, then let go, and
// their threads stay with the runtime, idle.
func reserveThreads(n int) {
	var ready, release sync.WaitGroup
	release.Add(1)
	for range n {
		ready.Add(1)
		go func() {
			runtime.LockOSThread()
			ready.Done()
			release.Wait()
			// Unlocked before it returns, so that the thread stays.
			runtime.UnlockOSThread()
		}()
	}
	ready.Wait()
	release.Done()
}
