package gitops

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DefaultMessage is the commit summary used when CommitOptions.Message is
// empty.
const DefaultMessage = "runner: agent changes"

// MaxMessageSize caps the text of CommitOptions.Message kept in a commit;
// a longer one is cut, with a line saying how much was left out.
const MaxMessageSize = 64 << 10

// Trailer is one "Key: value" line of the paragraph that closes a commit
// message, e.g. {"Runner-Task", "fix-login"}; `git interpret-trailers
// --parse` reads them back.
type Trailer struct {
	Key   string
	Value string
}

// Signature names the author and committer of a commit.
type Signature struct {
	Name  string
	Email string
}

// DefaultSignature is used when CommitOptions.Author is the zero value.
var DefaultSignature = Signature{Name: "runner", Email: "runner@localhost"}

// cutLine is the line after which git ignores the rest of a message (the
// "scissors" of `git commit --cleanup=scissors`), preceded by the comment
// character and a space.
const cutLine = "------------------------ >8 ------------------------"

// commitMessage returns the text, made safe by messageText, a blank line
// and the trailers, one per line, in the order given. Keys must be
// letters, digits and '-', not starting with '-'; values one non-empty
// line.
//
// Whatever text holds, the trailers git parses from the message (`git
// interpret-trailers --parse`, with or without --no-divider, and `git log
// --format=%(trailers)`) are exactly these, and none when there are none:
// they form the last paragraph, and nothing in the text can end the message
// before them or be taken for one of them.
func commitMessage(text string, trailers []Trailer) (string, error) {
	for _, t := range trailers {
		if err := validateTrailer(t); err != nil {
			return "", err
		}
	}
	body := messageText(text, len(trailers) == 0)
	if body == "" {
		body = DefaultMessage
	}
	var b strings.Builder
	b.WriteString(body)
	b.WriteString("\n")
	for i, t := range trailers {
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s\n", t.Key, strings.TrimSpace(t.Value))
	}
	return b.String(), nil
}

// messageText makes untrusted text fit for a commit message, changing as
// little as it can:
//
//   - it is cut to MaxMessageSize bytes; invalid UTF-8 becomes U+FFFD;
//   - CRLF and a lone CR end a line, as LF; other control characters (NUL,
//     ESC, the C1 range...) are written as \xNN, tabs kept;
//   - trailing white space is dropped from each line, blank lines from
//     both ends;
//   - a line git reads as the end of the message wherever it is (one
//     starting with "---", git's patch divider, or one holding the
//     scissors line that follows a comment character) or as a comment
//     (starting with '#') is indented by one space, which git does not
//     read so;
//   - when lastIsFinal (no trailers follow), trailer-shaped lines of the
//     last paragraph are indented too, so that it is not a trailer block.
func messageText(text string, lastIsFinal bool) string {
	cut := 0
	if len(text) > MaxMessageSize {
		cut = len(text) - MaxMessageSize
		text = text[:MaxMessageSize]
		// Do not leave half a character at the cut.
		for n := 1; n < utf8.UTFMax; n++ {
			if r, size := utf8.DecodeLastRuneInString(text); r != utf8.RuneError || size != 1 {
				break
			}
			text, cut = text[:len(text)-1], cut+1
		}
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(escapeControls(text), "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, " \t")
		if endsMessage(line) || strings.HasPrefix(line, "#") {
			line = " " + line
		}
		lines[i] = line
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if lastIsFinal {
		indentTrailerShaped(lines)
	}
	if cut > 0 {
		lines = append(lines, "", fmt.Sprintf("[%d more bytes of this message were cut]", cut))
	}
	return strings.Join(lines, "\n")
}

// escapeControls writes control characters other than tab and newline as
// \xNN (\u00NN for C1 ones), so that they neither reach a terminal showing
// `git log` nor change how git splits the message.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isEscapedControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isEscapedControl(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func isEscapedControl(r rune) bool {
	return r != '\t' && r != '\n' && (r < 0x20 || r >= 0x7f && r < 0xa0)
}

// endsMessage reports a line after which git stops reading a message for
// trailers: the patch divider ("---" then white space or the end of the
// line: `git interpret-trailers` without --no-divider, `git am`), or the
// scissors line whatever the comment character.
func endsMessage(line string) bool {
	if rest, ok := strings.CutPrefix(line, "---"); ok && (rest == "" || isGitSpace(rest[0])) {
		return true
	}
	return strings.Contains(line, cutLine)
}

// indentTrailerShaped indents the lines of the last paragraph that git
// could read as trailers (a token, optional blanks, a colon; or a line git
// writes itself), so that git reads the paragraph as text. The first
// paragraph is the subject, which git never reads as trailers.
func indentTrailerShaped(lines []string) {
	start := len(lines)
	for start > 0 && lines[start-1] != "" {
		start--
	}
	if start == 0 {
		return // a single paragraph: the subject
	}
	for i := start; i < len(lines); i++ {
		if trailerShaped(lines[i]) {
			lines[i] = " " + lines[i]
		}
	}
}

// trailerShaped follows git's find_separator: letters, digits and '-',
// then optional blanks, then ':'; or a prefix git recognises as its own.
func trailerShaped(line string) bool {
	if strings.HasPrefix(line, "(cherry picked from commit ") {
		return true
	}
	blank := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ':':
			return i > 0
		case !blank && (c == '-' || isAlnum(c)):
		case i > 0 && (c == ' ' || c == '\t'):
			blank = true
		default:
			return false
		}
	}
	return false
}

// Trailers returns the trailer block closing a message written by
// CommitTree: the last paragraph when every line of it is "Key: value" and
// no line before it that starts in the first column ends the message for
// git (see endsMessage); nil otherwise. Stricter than git, so that what it returns is what git parses
// too, whatever its options.
func Trailers(message string) []Trailer {
	message = strings.TrimRight(message, "\n")
	for line := range strings.SplitSeq(message, "\n") {
		if !strings.HasPrefix(line, " ") && endsMessage(line) {
			return nil
		}
	}
	i := strings.LastIndex(message, "\n\n")
	if i < 0 {
		return nil // the subject is never trailers
	}
	var out []Trailer
	for line := range strings.SplitSeq(message[i+2:], "\n") {
		key, value, ok := strings.Cut(line, ": ")
		t := Trailer{Key: key, Value: value}
		if !ok || validateTrailer(t) != nil || value != strings.TrimSpace(value) {
			return nil
		}
		out = append(out, t)
	}
	return out
}

func validateTrailer(t Trailer) error {
	if t.Key == "" || t.Key[0] == '-' {
		return fmt.Errorf("%w: key %q must start with a letter or digit", ErrInvalidTrailer, t.Key)
	}
	for i := 0; i < len(t.Key); i++ {
		if c := t.Key[i]; c != '-' && !isAlnum(c) {
			return fmt.Errorf("%w: key %q may hold only letters, digits and '-'", ErrInvalidTrailer, t.Key)
		}
	}
	v := strings.TrimSpace(t.Value)
	if v == "" {
		return fmt.Errorf("%w: %s has an empty value", ErrInvalidTrailer, t.Key)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: %s value must be a single line without control characters", ErrInvalidTrailer, t.Key)
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isGitSpace is git's isspace: the ASCII white space characters.
func isGitSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// orDefault validates s, or returns DefaultSignature for the zero value.
// Angle brackets, newlines and NUL would break the commit header.
func (s Signature) orDefault() (Signature, error) {
	if s == (Signature{}) {
		return DefaultSignature, nil
	}
	if strings.TrimSpace(s.Name) == "" || strings.TrimSpace(s.Email) == "" {
		return s, fmt.Errorf("%w: name and email are both required, got %q <%s>", ErrInvalidSignature, s.Name, s.Email)
	}
	if strings.ContainsAny(s.Name+s.Email, "<>\n\r\x00") {
		return s, fmt.Errorf("%w: %q <%s> contains '<', '>', a newline or NUL", ErrInvalidSignature, s.Name, s.Email)
	}
	return Signature{Name: strings.TrimSpace(s.Name), Email: strings.TrimSpace(s.Email)}, nil
}
