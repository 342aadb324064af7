package provider

import (
	"strings"
	"testing"
)

func TestFromURL(t *testing.T) {
	tests := []struct {
		url  string
		want Name
	}{
		{"", OpenAI},
		{"https://api.openai.com/v1", OpenAI},
		{"https://generativelanguage.googleapis.com/v1beta/openai/", Gemini},
		{"https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/endpoints/openapi", Gemini},
		{"https://api.anthropic.com/v1/", Anthropic},
		{"https://api.deepseek.com", DeepSeek},
		{"https://api.mistral.ai/v1", Mistral},
		{"https://codestral.mistral.ai/v1", Mistral},
		{"https://api.groq.com/openai/v1", Groq},
		{"https://openrouter.ai/api/v1", OpenRouter},
		{"http://localhost:11434/v1", Ollama},
		{"http://10.0.0.7:11434/v1", Ollama},
		{"https://ollama.com/v1", Ollama},
		{"http://ollama.internal:8080/v1", Ollama},
		{"http://127.0.0.1:8000/v1", Auto},
		{"https://llm.example.com/v1", Auto},
		{"https://api.openai.com.evil.example/v1", Auto},
		{"https://notapi.openai.com/v1", Auto},
		{"::not a url", Auto},
	}
	for _, tt := range tests {
		if got := FromURL(tt.url); got != tt.want {
			t.Errorf("FromURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, n := range Names() {
		if got, err := Parse(strings.ToUpper(n)); err != nil || string(got) != n {
			t.Errorf("Parse(%q) = %q, %v", strings.ToUpper(n), got, err)
		}
	}
	if _, err := Parse("gemeni"); err == nil || !strings.Contains(err.Error(), "auto, openai, gemini") {
		t.Errorf("Parse(gemeni) error = %v, want one listing the names", err)
	}
}

// Every name has a profile, and the rules the README states hold.
func TestProfiles(t *testing.T) {
	for _, n := range Names() {
		if p := ProfileOf(Name(n)); p.Name != Name(n) {
			t.Errorf("ProfileOf(%s).Name = %q", n, p.Name)
		}
	}
	if p := ProfileOf(Mistral); p.Cap != CapMaxTokens || p.EchoReasoning || !p.ShortCallIDs {
		t.Errorf("mistral = %+v", p)
	}
	if p := ProfileOf(DeepSeek); !p.EchoReasoning || !p.ReasoningOnEveryTurn {
		t.Errorf("deepseek = %+v", p)
	}
	if p := ProfileOf(Ollama); p.CapHonoured || p.Cap != CapBoth {
		t.Errorf("ollama = %+v, want both limits sent and the cap not honoured", p)
	}
	if p := ProfileOf(Gemini); !p.EchoExtraContent {
		t.Errorf("gemini = %+v", p)
	}
	if p := ProfileOf(OpenAI); p.EchoReasoning || p.EchoExtraContent || p.Cap != CapMaxCompletionTokens {
		t.Errorf("openai = %+v", p)
	}
	if p := Resolve(Auto, "https://api.groq.com/openai/v1"); p.Name != Groq {
		t.Errorf("Resolve(auto, groq URL) = %s", p.Name)
	}
	if p := Resolve(Groq, "http://localhost:11434/v1"); p.Name != Groq {
		t.Errorf("a named provider wins over the URL: got %s", p.Name)
	}
}
