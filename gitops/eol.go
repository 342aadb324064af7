package gitops

import (
	"io"
)

// Line-ending conversion as git 2.39 does it (convert.c) with its default
// configuration, which is what a fresh clone has: core.autocrlf=false and
// core.eol=native, that is LF on Linux. Only the attributes text, crlf
// (its older spelling) and eol then ask for a conversion.

// crlfAction is convert.c's crlf_action once decided for a path.
type crlfAction uint8

const (
	crlfBinary    crlfAction = iota // no conversion
	crlfTextInput                   // text: CRLF to LF when stored, nothing on checkout
	crlfTextCRLF                    // text eol=crlf: CRLF to LF when stored, LF to CRLF on checkout
	crlfAuto                        // text=auto: like text for text files
	crlfAutoInput                   // text=auto eol=lf
	crlfAutoCRLF                    // text=auto eol=crlf
	crlfUndefined                   // not decided yet (never returned)
	crlfText                        // "text" before core.eol is applied (never returned)
)

// action decides the conversion of a path from its attributes, as
// convert_attrs does: "text" (or else "crlf") chooses text, binary or
// auto; "eol" turns anything but binary into text, keeping auto; then
// core.eol=lf turns text into input, and core.autocrlf=false leaves an
// undecided path alone.
func (pa pathAttrs) action() crlfAction {
	act := textAction(pa.text)
	if act == crlfUndefined {
		act = textAction(pa.crlf)
	}
	if act != crlfBinary && pa.eol.state == attrString {
		switch auto := act == crlfAuto; pa.eol.value {
		case "lf":
			act = crlfTextInput
			if auto {
				act = crlfAutoInput
			}
		case "crlf":
			act = crlfTextCRLF
			if auto {
				act = crlfAutoCRLF
			}
		}
	}
	switch act {
	case crlfText:
		return crlfTextInput
	case crlfUndefined:
		return crlfBinary
	}
	return act
}

// textAction is convert.c's git_path_check_crlf.
func textAction(v attrValue) crlfAction {
	switch v.state {
	case attrSet:
		return crlfText
	case attrUnset:
		return crlfBinary
	case attrString:
		switch v.value {
		case "input":
			return crlfTextInput
		case "auto":
			return crlfAuto
		}
	}
	return crlfUndefined
}

func (a crlfAction) auto() bool {
	return a == crlfAuto || a == crlfAutoInput || a == crlfAutoCRLF
}

// outputsCRLF reports whether a checkout writes CRLF line endings.
func (a crlfAction) outputsCRLF() bool {
	return a == crlfTextCRLF || a == crlfAutoCRLF
}

// textStats counts what git's gather_stats counts. It is an io.Writer so
// that content can be counted as it streams; finish must be called at the
// end.
type textStats struct {
	nul, loneCR, loneLF, crlf uint64
	printable, nonprintable   uint64
	size                      int64
	pendingCR                 bool
	last                      byte
}

func (s *textStats) Write(b []byte) (int, error) {
	for _, c := range b {
		if s.pendingCR {
			s.pendingCR = false
			if c == '\n' {
				s.crlf++
				continue
			}
			s.loneCR++
		}
		switch {
		case c == '\r':
			s.pendingCR = true
		case c == '\n':
			s.loneLF++
		case c == 127:
			s.nonprintable++
		case c < 32:
			switch c {
			case '\b', '\t', '\033', '\014':
				s.printable++
			case 0:
				s.nul++
				s.nonprintable++
			default:
				s.nonprintable++
			}
		default:
			s.printable++
		}
	}
	if len(b) > 0 {
		s.last = b[len(b)-1]
		s.size += int64(len(b))
	}
	return len(b), nil
}

// finish accounts for the end of the content: a trailing CR is a lone
// one, and a trailing ^Z (DOS end of file) is not held against the
// content.
func (s *textStats) finish() {
	if s.pendingCR {
		s.pendingCR = false
		s.loneCR++
	}
	if s.size > 0 && s.last == '\032' {
		s.nonprintable--
	}
}

// binary is convert_is_binary: a lone CR, a NUL, or more than one
// non-printable byte in 128.
func (s *textStats) binary() bool {
	return s.loneCR > 0 || s.nul > 0 || s.printable>>7 < s.nonprintable
}

func statsOf(b []byte) textStats {
	var s textStats
	s.Write(b)
	s.finish()
	return s
}

// addsCR reports whether checking out content with these stats under act
// turns its lone LFs into CRLF (will_convert_lf_to_crlf). With text=auto,
// content that already has a CR, or looks binary, is left alone.
func (a crlfAction) addsCR(s *textStats) bool {
	if !a.outputsCRLF() || s.loneLF == 0 {
		return false
	}
	if a.auto() && (s.loneCR > 0 || s.crlf > 0 || s.binary()) {
		return false
	}
	return true
}

// dropsCR reports whether storing content with these stats under act turns
// its CRLFs into LF (crlf_to_git). With text=auto, content that looks
// binary is left alone, and so is content whose version in the index
// (indexHasCRLF, asked only then) already has CRLF: git's "safer autocrlf".
func (a crlfAction) dropsCR(s *textStats, indexHasCRLF func() (bool, error)) (bool, error) {
	if a == crlfBinary || s.size == 0 || s.crlf == 0 {
		return false, nil
	}
	if a.auto() {
		if s.binary() {
			return false, nil
		}
		has, err := indexHasCRLF()
		if err != nil || has {
			return false, err
		}
	}
	return true, nil
}

// hasCRLF is convert.c's has_crlf_in_index for content already read: a
// CRLF in content that does not look binary.
func hasCRLF(s *textStats) bool {
	return s.crlf > 0 && !s.binary()
}

// toWorktree converts content as a checkout under act does (only lone LFs
// become CRLF: nothing else changes with git's default configuration).
func toWorktree(content []byte, act crlfAction) []byte {
	st := statsOf(content)
	if !act.addsCR(&st) {
		return content
	}
	out := make([]byte, 0, len(content)+int(st.loneLF))
	prevCR := false
	for _, c := range content {
		if c == '\n' && !prevCR {
			out = append(out, '\r')
		}
		out = append(out, c)
		prevCR = c == '\r'
	}
	return out
}

// lfToCRLF reads r with a CR inserted before every LF not preceded by one:
// the checkout of a text file with eol=crlf. The result is s.loneLF bytes
// longer than r.
type lfToCRLF struct {
	r         io.Reader
	in, buf   []byte
	err       error
	prevCR    bool
	pendingLF bool
}

func newLFToCRLF(r io.Reader) *lfToCRLF {
	return &lfToCRLF{r: r, buf: make([]byte, 32<<10)}
}

func (t *lfToCRLF) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if t.pendingLF {
			p[n], t.pendingLF = '\n', false
			n++
			continue
		}
		if len(t.in) == 0 {
			if t.err != nil || n > 0 {
				break
			}
			m, err := t.r.Read(t.buf)
			t.in, t.err = t.buf[:m], err
			continue
		}
		c := t.in[0]
		t.in = t.in[1:]
		if c == '\n' && !t.prevCR {
			p[n], t.pendingLF = '\r', true
			n++
			continue
		}
		p[n], t.prevCR = c, c == '\r'
		n++
	}
	if n == 0 && t.err != nil {
		return 0, t.err
	}
	return n, nil
}

// crlfToLF reads r without the CR of every CRLF: what git stores for a
// text file. The result is s.crlf bytes shorter than r.
type crlfToLF struct {
	r       io.Reader
	in, buf []byte
	err     error
	heldCR  bool
}

func newCRLFToLF(r io.Reader) *crlfToLF {
	return &crlfToLF{r: r, buf: make([]byte, 32<<10)}
}

func (t *crlfToLF) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(t.in) == 0 {
			if t.err != nil {
				if t.heldCR {
					p[n], t.heldCR = '\r', false
					n++
					continue
				}
				break
			}
			if n > 0 {
				break
			}
			m, err := t.r.Read(t.buf)
			t.in, t.err = t.buf[:m], err
			continue
		}
		c := t.in[0]
		if t.heldCR {
			t.heldCR = false
			if c != '\n' {
				p[n] = '\r' // a lone CR stays; c is read next
				n++
				continue
			}
		}
		t.in = t.in[1:]
		if c == '\r' {
			t.heldCR = true
			continue
		}
		p[n] = c
		n++
	}
	if n == 0 && t.err != nil {
		return 0, t.err
	}
	return n, nil
}
