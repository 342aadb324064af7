// Package attend is the person at the terminal of an attended run: it asks
// them the agent's questions and, with approval on, whether each command
// and file change may run. Everything shown comes from the model or the
// sandbox and goes through the printer's escaping; nothing shown can pass
// for runner's own prompt.
package attend

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/runner-dev/runner/internal/cli"
)

// Console reads answers from one input (a terminal) and writes questions
// through a printer. Its methods may be called from several goroutines;
// one question is on screen at a time.
type Console struct {
	p     *cli.Printer
	lines chan lineOrErr
	once  sync.Once
	in    *bufio.Reader
	mu    sync.Mutex // one question at a time
	rules rules
}

type lineOrErr struct {
	line string
	err  error
}

// NewConsole returns a console reading lines from in.
func NewConsole(in io.Reader, p *cli.Printer) *Console {
	return &Console{p: p, in: bufio.NewReader(in), lines: make(chan lineOrErr)}
}

// ErrClosed is returned when the input ended: nobody can answer.
var ErrClosed = errors.New("the terminal's input ended; nobody can answer")

// readLine returns the next line typed, or the context's error as soon as
// it ends (Ctrl-C at a prompt): the read itself goes on in the background
// and its line is the next one returned.
func (c *Console) readLine(ctx context.Context) (string, error) {
	c.once.Do(func() {
		go func() {
			for {
				line, err := c.in.ReadString('\n')
				if err != nil && line == "" {
					if err == io.EOF {
						err = ErrClosed
					}
					c.lines <- lineOrErr{err: err}
					close(c.lines)
					return
				}
				c.lines <- lineOrErr{line: strings.TrimRight(line, "\r\n")}
			}
		}()
	})
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case l, ok := <-c.lines:
		if !ok {
			return "", ErrClosed
		}
		return l.line, l.err
	}
}

// Ask shows the agent's question and returns the line typed (trimmed; empty
// lets the agent decide).
func (c *Console) Ask(ctx context.Context, question string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p.Note("")
	c.p.Note("The agent asks:")
	c.p.Excerpt("  ", question)
	c.p.Prompt("Your answer (empty to let it decide): ")
	line, err := c.readLine(ctx)
	return strings.TrimSpace(line), err
}
