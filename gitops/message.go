package gitops

import (
	"fmt"
	"strings"
)

// DefaultMessage is the commit summary used when CommitOptions.Message is
// empty.
const DefaultMessage = "runner: agent changes"

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

// commitMessage returns summary, a blank line and the trailers, one per
// line, in the order given. Keys must be letters, digits and '-', not
// starting with '-'; values one non-empty line.
func commitMessage(summary string, trailers []Trailer) (string, error) {
	if strings.IndexByte(summary, 0) >= 0 {
		return "", fmt.Errorf("commit message contains a NUL byte")
	}
	summary = strings.TrimRight(summary, " \t\r\n")
	if summary == "" {
		summary = DefaultMessage
	}
	var b strings.Builder
	b.WriteString(summary)
	b.WriteString("\n")
	for i, t := range trailers {
		if err := validateTrailer(t); err != nil {
			return "", err
		}
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s\n", t.Key, strings.TrimSpace(t.Value))
	}
	return b.String(), nil
}

func validateTrailer(t Trailer) error {
	if t.Key == "" || t.Key[0] == '-' {
		return fmt.Errorf("%w: key %q must start with a letter or digit", ErrInvalidTrailer, t.Key)
	}
	for _, c := range t.Key {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("%w: key %q may hold only letters, digits and '-'", ErrInvalidTrailer, t.Key)
		}
	}
	v := strings.TrimSpace(t.Value)
	if v == "" {
		return fmt.Errorf("%w: %s has an empty value", ErrInvalidTrailer, t.Key)
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("%w: %s value must be a single line", ErrInvalidTrailer, t.Key)
	}
	return nil
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
