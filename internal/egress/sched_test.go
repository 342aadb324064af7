package egress

import "time"

// runtimeGosched lets the proxy's goroutines run while a test waits for
// an event it will observe.
func runtimeGosched() { time.Sleep(time.Millisecond) }
