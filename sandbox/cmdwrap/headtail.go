package cmdwrap

import (
	"fmt"
	"strings"
)

// HeadTail keeps the first and the last bytes written to it, up to max in
// all, and counts what falls in between. It never grows past max, however
// much is written, so a command that floods its output costs no memory.
type HeadTail struct {
	max   int
	head  []byte
	tail  []byte // ring buffer of len max-max/2 once full
	pos   int    // next write position in tail
	full  bool   // tail has wrapped
	total int64
}

func NewHeadTail(max int) *HeadTail {
	return &HeadTail{max: max, head: make([]byte, 0, max/2)}
}

func (b *HeadTail) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if room := cap(b.head) - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	size := b.max - b.max/2
	if len(p) == 0 || size == 0 {
		return n, nil
	}
	if b.tail == nil {
		b.tail = make([]byte, size)
	}
	if len(p) >= size {
		copy(b.tail, p[len(p)-size:])
		b.pos, b.full = 0, true
		return n, nil
	}
	k := copy(b.tail[b.pos:], p)
	if k < len(p) {
		copy(b.tail, p[k:])
		b.full = true
	}
	b.pos = (b.pos + len(p)) % size
	if b.pos == 0 && k == len(p) {
		b.full = true
	}
	return n, nil
}

// tailBytes returns the tail in order.
func (b *HeadTail) tailBytes() []byte {
	if !b.full {
		return b.tail[:b.pos]
	}
	out := make([]byte, 0, len(b.tail))
	out = append(out, b.tail[b.pos:]...)
	return append(out, b.tail[:b.pos]...)
}

// Dropped is the number of bytes written but not kept.
func (b *HeadTail) Dropped() int64 {
	return b.total - int64(len(b.head)) - int64(len(b.tailBytes()))
}

// String returns what was kept, with a note where bytes were dropped. Text
// cut in the middle of a UTF-8 sequence is repaired.
func (b *HeadTail) String() string {
	head, tail := string(b.head), string(b.tailBytes())
	if d := b.Dropped(); d > 0 {
		return strings.ToValidUTF8(head, "\uFFFD") +
			fmt.Sprintf("\n[... %d bytes of output dropped ...]\n", d) +
			strings.ToValidUTF8(tail, "\uFFFD")
	}
	return strings.ToValidUTF8(head+tail, "\uFFFD")
}
