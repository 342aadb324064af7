package tasks

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// DefaultMaxPromptSize caps a task's prompt, written inline or read from
// prompt_file, unless the file's defaults set max_prompt_size. A prompt
// beyond it is almost surely a mistake (the wrong file, a log pasted whole),
// and would be sent to the model with every call.
const DefaultMaxPromptSize = 4 << 20

// maxPromptSizeLimit is the largest max_prompt_size accepted.
const maxPromptSizeLimit = 256 << 20

// maxYAMLSize caps a YAML task file, which is read whole; JSON Lines files
// are read as a stream, one line at a time.
const maxYAMLSize = 256 << 20

// openTaskFile opens the task file at path: a regular file, or a pipe or
// FIFO (process substitution, a generator), which is read as it comes.
// Directories, devices and sockets are refused. Opening a FIFO waits for
// its writer; when ctx ends first, openTaskFile returns at once and the
// open is abandoned (the file is closed if it ever opens).
func openTaskFile(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	var o opened
	select {
	case o = <-ch:
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
	if o.err != nil {
		return nil, o.err
	}
	fi, err := o.f.Stat()
	if err != nil {
		o.f.Close()
		return nil, err
	}
	if m := fi.Mode(); !m.IsRegular() && m&fs.ModeNamedPipe == 0 {
		o.f.Close()
		return nil, fmt.Errorf("%s is %s; want a regular file or a pipe", path, fileKind(m))
	}
	return o.f, nil
}

// interruptible makes reads of f return once ctx ends: a read blocked on a
// pipe is woken by a past deadline, and every read checks ctx first. stop
// releases ctx.
func interruptible(ctx context.Context, f *os.File) (r io.Reader, stop func() bool) {
	stop = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	return ctxReader{ctx, f}, stop
}

// ctxReader fails every read once ctx has ended.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	n, err := c.r.Read(p)
	if err != nil && c.ctx.Err() != nil {
		err = context.Cause(c.ctx)
	}
	return n, err
}

// sizeError reports a file over its cap.
type sizeError struct {
	path        string
	size, limit int64 // size is 0 when the file grew past limit while read
}

func (e *sizeError) Error() string {
	if e.size == 0 {
		return fmt.Sprintf("%s is over the %s cap", e.path, humanSize(e.limit))
	}
	return fmt.Sprintf("%s is %s, over the %s cap", e.path, humanSize(e.size), humanSize(e.limit))
}

// readPromptFile reads the prompt file at path, which must be a regular
// file of at most limit bytes. It never blocks on a FIFO (the file is
// opened non-blocking and refused by its type) and never reads past limit,
// so neither a device such as /dev/zero nor a huge file costs more than the
// cap. It stops when ctx ends.
func readPromptFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s; want a regular file", path, fileKind(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, &sizeError{path: path, size: fi.Size(), limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, f}, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit { // it grew while being read
		return nil, &sizeError{path: path, limit: limit}
	}
	return data, nil
}

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// humanSize writes a byte count as max_prompt_size is written: "4m",
// "512k", "1.5m", or bytes below a kibibyte.
func humanSize(n int64) string {
	units := []struct {
		shift  uint
		suffix string
	}{{30, "g"}, {20, "m"}, {10, "k"}}
	for _, u := range units {
		if n >= 1<<u.shift {
			v := float64(n) / float64(int64(1)<<u.shift)
			if n%(1<<u.shift) == 0 {
				return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
			}
			return fmt.Sprintf("%.1f%s", v, u.suffix)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
