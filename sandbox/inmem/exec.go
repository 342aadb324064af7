package inmem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// Exec records cmd and answers it with the sandbox's ExecFunc. The output
// the function returns is capped as the Docker backend caps it (head and
// tail of opt.MaxOutput bytes, the rest counted in Dropped). There is no
// timeout: a function that wants one reports TimedOut itself.
func (s *Sandbox) Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	s.mu.Lock()
	err := s.usable()
	if err == nil {
		s.ran = append(s.ran, cmd)
	}
	s.mu.Unlock()
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	if _, err := rel(opt.Dir); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("%s: %w", opt.Dir, err)
	}
	if opt.MaxOutput <= 0 {
		opt.MaxOutput = sandbox.DefaultMaxOutput
	}
	begin := time.Now()
	res, err := s.exec(ctx, s, cmd, opt)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if res.Output == "" && (res.Stdout != "" || res.Stderr != "") {
		res.Output = res.Stdout + res.Stderr
	}
	var d1, d2, d3 int64
	res.Stdout, d1 = capOutput(res.Stdout, opt.MaxOutput)
	res.Stderr, d2 = capOutput(res.Stderr, opt.MaxOutput)
	res.Output, d3 = capOutput(res.Output, opt.MaxOutput)
	if d1+d2+d3 > 0 {
		res.Truncated, res.Dropped = true, d3
	}
	if res.Duration == 0 {
		res.Duration = time.Since(begin)
	}
	return res, nil
}

// capOutput keeps the head and the tail of s, max bytes in all, with a note
// where bytes were dropped, as the Docker backend does.
func capOutput(s string, max int) (string, int64) {
	if len(s) <= max {
		return s, 0
	}
	head, tail := s[:max/2], s[len(s)-(max-max/2):]
	dropped := int64(len(s) - max)
	return strings.ToValidUTF8(head, "\uFFFD") + fmt.Sprintf("\n[... %d bytes of output dropped ...]\n", dropped) +
		strings.ToValidUTF8(tail, "\uFFFD"), dropped
}

// Builtin is the default ExecFunc. It runs one simple command, its words
// split as sh would split plain, single- and double-quoted words (no
// expansions, pipes or lists), out of this set:
//
//	true, false, exit [N]          the exit code
//	echo [WORD...]                 the words on stdout
//	cat FILE...                    the files on stdout
//	grep -q STRING FILE            exit 0 if FILE contains STRING, else 1
//	test -e|-f|-d PATH, [ ... ]    exit 0 if PATH is there (a file, a directory)
//
// Any other command exits with 127, "not found" on stderr, as a shell does
// for a program it cannot find.
func Builtin(ctx context.Context, sb *Sandbox, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	words, err := splitWords(cmd)
	if err != nil {
		return fail(2, "sh: "+err.Error()), nil
	}
	if len(words) == 0 {
		return sandbox.ExecResult{}, nil
	}
	file := func(p string) string { return joinDir(opt.Dir, p) }
	switch name, args := words[0], words[1:]; name {
	case "true":
		return sandbox.ExecResult{}, nil
	case "false":
		return sandbox.ExecResult{ExitCode: 1}, nil
	case "exit":
		code := 0
		if len(args) > 0 {
			if code, err = strconv.Atoi(args[0]); err != nil {
				return fail(2, "sh: exit: Illegal number: "+args[0]), nil
			}
		}
		return sandbox.ExecResult{ExitCode: code & 0xff}, nil
	case "echo":
		out := strings.Join(args, " ") + "\n"
		return sandbox.ExecResult{Stdout: out, Output: out}, nil
	case "cat":
		var out strings.Builder
		for _, a := range args {
			b, err := sb.ReadFile(ctx, file(a))
			if err != nil {
				return failWith(1, &out, "cat: "+a+": "+reason(err)), nil
			}
			out.Write(b)
		}
		return sandbox.ExecResult{Stdout: out.String(), Output: out.String()}, nil
	case "grep":
		if len(args) != 3 || args[0] != "-q" {
			return fail(2, "grep: only grep -q STRING FILE is emulated"), nil
		}
		b, err := sb.ReadFile(ctx, file(args[2]))
		if err != nil {
			return fail(2, "grep: "+args[2]+": "+reason(err)), nil
		}
		if strings.Contains(string(b), args[1]) {
			return sandbox.ExecResult{}, nil
		}
		return sandbox.ExecResult{ExitCode: 1}, nil
	case "test", "[":
		if name == "[" {
			if len(args) == 0 || args[len(args)-1] != "]" {
				return fail(2, "[: missing ]"), nil
			}
			args = args[:len(args)-1]
		}
		if len(args) != 2 {
			return fail(2, name+": only -e, -f and -d PATH are emulated"), nil
		}
		sb.mu.Lock()
		n, _, err := sb.tree.lookup(file(args[1]), true)
		sb.mu.Unlock()
		ok := err == nil && n != nil
		switch args[0] {
		case "-f":
			ok = ok && n.kind == kindFile
		case "-d":
			ok = ok && n.kind == kindDir
		case "-e":
		default:
			return fail(2, name+": only -e, -f and -d PATH are emulated"), nil
		}
		if ok {
			return sandbox.ExecResult{}, nil
		}
		return sandbox.ExecResult{ExitCode: 1}, nil
	}
	return fail(127, "sh: "+words[0]+": not found (the in-memory sandbox runs true, false, exit, echo, cat, grep -q and test)"), nil
}

// joinDir resolves p against the command's directory, as a relative path
// of the workspace.
func joinDir(dir, p string) string {
	if strings.HasPrefix(p, "/") || dir == "" {
		return p
	}
	return dir + "/" + p
}

// reason is what a shell would print of a file error: the cause alone.
func reason(err error) string {
	if cause := errors.Unwrap(err); cause != nil {
		return cause.Error()
	}
	return err.Error()
}

func fail(code int, msg string) sandbox.ExecResult {
	return sandbox.ExecResult{ExitCode: code, Stderr: msg + "\n", Output: msg + "\n"}
}

func failWith(code int, stdout *strings.Builder, msg string) sandbox.ExecResult {
	res := fail(code, msg)
	res.Stdout = stdout.String()
	res.Output = res.Stdout + res.Output
	return res
}

// splitWords splits cmd into words as sh does for plain, single-quoted
// and double-quoted words, without expansions. Operators (; | & < > ( ) $
// `) outside quotes are refused: they would need a shell.
func splitWords(cmd string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated quoted string")
			}
			cur.WriteString(cmd[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(cmd) && cmd[i] != '"'; i++ {
				if cmd[i] == '\\' && i+1 < len(cmd) && strings.IndexByte("\"\\$`", cmd[i+1]) >= 0 {
					i++
				} else if cmd[i] == '$' || cmd[i] == '`' {
					return nil, fmt.Errorf("%q: expansions are not emulated", cmd)
				}
				cur.WriteByte(cmd[i])
			}
			if i == len(cmd) {
				return nil, errors.New("unterminated quoted string")
			}
			inWord = true
		case c == '\\' && i+1 < len(cmd):
			i++
			cur.WriteByte(cmd[i])
			inWord = true
		case strings.IndexByte(";|&<>()$`*?", c) >= 0:
			return nil, fmt.Errorf("%q: operators and expansions are not emulated", cmd)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
