package progress

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// The terminal controls a Screen writes, and the only ones.
const (
	cursorUp   = "\x1b[%dA" // CUU: up n lines, same column
	clearLine  = "\x1b[K"   // EL: erase to the end of the line
	clearBelow = "\x1b[J"   // ED: erase to the end of the screen
)

// Screen keeps a block of lines at the bottom of a terminal and redraws it
// in place: each frame moves the cursor up over the block and writes the
// new one over it, line by line, in a single write, so that no line is
// ever blank on screen between two frames. Lines printed above the block
// stay. The caller makes lines fit the terminal's width (they must not
// wrap) and escapes what they hold; a Screen is safe for concurrent use.
type Screen struct {
	mu    sync.Mutex
	w     io.Writer
	shown int      // lines of the block on screen
	last  []string // the block on screen
}

// NewScreen draws on w, a terminal.
func NewScreen(w io.Writer) *Screen { return &Screen{w: w} }

// Draw prints the lines above (kept), then the block in place of the one
// on screen. Nothing is written when there is nothing to print and the
// block is unchanged.
func (s *Screen) Draw(above, block []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(above) == 0 && slices.Equal(block, s.last) {
		return nil
	}
	var buf bytes.Buffer
	if s.shown > 0 {
		fmt.Fprintf(&buf, cursorUp, s.shown)
	}
	for _, l := range append(slices.Clip(above), block...) {
		buf.WriteString("\r" + l + clearLine + "\n")
	}
	if len(above)+len(block) < s.shown {
		buf.WriteString("\r" + clearBelow)
	}
	s.shown, s.last = len(block), slices.Clone(block)
	_, err := s.w.Write(buf.Bytes())
	return err
}

// Clear removes the block from the screen, leaving the cursor where it
// began.
func (s *Screen) Clear() error { return s.Draw(nil, nil) }

// Terminal draws a Board on a Screen: on every change and every tick, so
// that times and the ETA move.
type Terminal struct {
	board  *Board
	screen *Screen
	// size returns the terminal's width and height.
	size  func() (width, height int)
	color bool
	now   func() time.Time

	mu      sync.Mutex
	pending []string // lines to print above the board at the next draw
	stop    chan struct{}
	done    chan struct{}
}

// NewTerminal draws board on w; size reports the terminal's size, read
// before each frame so that a resized window is followed.
func NewTerminal(w io.Writer, board *Board, size func() (int, int), color bool) *Terminal {
	return &Terminal{board: board, screen: NewScreen(w), size: size, color: color, now: time.Now}
}

// Print prints a line above the board, escaped by the caller; it stays.
func (t *Terminal) Print(line string) {
	t.mu.Lock()
	t.pending = append(t.pending, line)
	t.mu.Unlock()
	t.Redraw()
}

// Redraw draws the board as it is now.
func (t *Terminal) Redraw() {
	t.mu.Lock()
	above := t.pending
	t.pending = nil
	t.mu.Unlock()
	w, h := t.size()
	t.screen.Draw(above, t.board.Lines(t.now(), w, h, t.color))
}

// Start redraws the board every interval until Stop.
func (t *Terminal) Start(interval time.Duration) {
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.Redraw()
			}
		}
	}()
}

// Stop ends the redrawing, prints what is pending and removes the board.
func (t *Terminal) Stop() {
	if t.stop != nil {
		close(t.stop)
		<-t.done
	}
	t.mu.Lock()
	above := t.pending
	t.pending = nil
	t.mu.Unlock()
	t.screen.Draw(above, nil)
}
