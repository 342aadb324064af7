package gitops

import (
	"errors"
	"testing"
)

func TestCommitMessage(t *testing.T) {
	tests := []struct {
		name     string
		summary  string
		trailers []Trailer
		want     string
		wantErr  error
	}{
		{"summary only", "Fix bug", nil, "Fix bug\n", nil},
		{"default summary", "  \n", nil, DefaultMessage + "\n", nil},
		{"trailing newlines trimmed", "Fix bug\n\n\n", []Trailer{{"Runner-Task", "t1"}}, "Fix bug\n\nRunner-Task: t1\n", nil},
		{"order kept", "S\n\nBody", []Trailer{{"B-Key", "2"}, {"A-Key", " 1 "}}, "S\n\nBody\n\nB-Key: 2\nA-Key: 1\n", nil},
		{"key with space", "S", []Trailer{{"Bad Key", "v"}}, "", ErrInvalidTrailer},
		{"key with colon", "S", []Trailer{{"K:", "v"}}, "", ErrInvalidTrailer},
		{"key starting with dash", "S", []Trailer{{"-K", "v"}}, "", ErrInvalidTrailer},
		{"empty key", "S", []Trailer{{"", "v"}}, "", ErrInvalidTrailer},
		{"empty value", "S", []Trailer{{"K", " "}}, "", ErrInvalidTrailer},
		{"multi-line value", "S", []Trailer{{"K", "a\nb"}}, "", ErrInvalidTrailer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := commitMessage(tt.summary, tt.trailers)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("message = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := commitMessage("a\x00b", nil); err == nil {
		t.Error("message with NUL accepted")
	}
}

func TestSignatureOrDefault(t *testing.T) {
	tests := []struct {
		in      Signature
		want    Signature
		wantErr error
	}{
		{Signature{}, DefaultSignature, nil},
		{Signature{Name: " Ann ", Email: "ann@x"}, Signature{Name: "Ann", Email: "ann@x"}, nil},
		{Signature{Name: "Ann"}, Signature{}, ErrInvalidSignature},
		{Signature{Name: "A<n", Email: "a@x"}, Signature{}, ErrInvalidSignature},
		{Signature{Name: "Ann", Email: "a@x>\n"}, Signature{}, ErrInvalidSignature},
	}
	for _, tt := range tests {
		got, err := tt.in.orDefault()
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%+v.orDefault() err = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("%+v.orDefault() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}
