package budget

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLookup(t *testing.T) {
	table := DefaultPrices()
	tests := []struct {
		name      string
		model     string
		wantModel string
	}{
		{"exact", "gpt-4o", "gpt-4o"},
		{"case and space", "  GPT-4o-Mini ", "gpt-4o-mini"},
		{"provider prefix", "openai/gpt-4.1", "gpt-4.1"},
		{"nested prefix", "openrouter/openai/o4-mini", "o4-mini"},
		{"gemini resource name", "models/gemini-2.5-pro", "gemini-2.5-pro"},
		{"openai snapshot", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"prefix and snapshot", "openai/gpt-4.1-2025-04-14", "gpt-4.1"},
		{"snapshot with its own price wins", "gpt-4o-2024-05-13", "gpt-4o-2024-05-13"},
		{"other gpt-4o snapshot", "gpt-4o-2024-08-06", "gpt-4o"},
		{"anthropic snapshot", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"anthropic alias", "anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"},
		{"anthropic -0 alias with snapshot", "claude-opus-4-20250514", "claude-opus-4"},
		{"deepseek alias", "deepseek-reasoner", "deepseek-chat"},
	}
	for _, tt := range tests {
		p, err := table.Lookup(tt.model)
		if err != nil {
			t.Errorf("%s: Lookup(%q) error: %v", tt.name, tt.model, err)
			continue
		}
		if p.Model != tt.wantModel {
			t.Errorf("%s: Lookup(%q) = %q, want %q", tt.name, tt.model, p.Model, tt.wantModel)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	table := DefaultPrices()
	for _, model := range []string{"llama-3-70b", "gpt-4o-2024", "gpt-4", "", "gemini-2.5-flash-preview-05-20"} {
		_, err := table.Lookup(model)
		if !errors.Is(err, ErrNoPrice) {
			t.Errorf("Lookup(%q) error = %v, want ErrNoPrice", model, err)
			continue
		}
		if !strings.Contains(err.Error(), "\""+model+"\"") || !strings.Contains(err.Error(), "price file") {
			t.Errorf("Lookup(%q) error %q does not name the model and how to price it", model, err)
		}
	}
}

func TestResolve(t *testing.T) {
	table := DefaultPrices()
	tests := []struct {
		model   string
		capped  bool
		want    Rates
		wantErr bool
	}{
		{"gpt-4o", true, gpt4o.Rates, false},
		{"gpt-4o", false, gpt4o.Rates, false},
		{"my-local-model", false, Rates{}, false},
		{"my-local-model", true, Rates{}, true},
	}
	for _, tt := range tests {
		p, err := table.Resolve(tt.model, tt.capped)
		if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrNoPrice)) {
			t.Errorf("Resolve(%q, %v) error = %v, want ErrNoPrice: %v", tt.model, tt.capped, err, tt.wantErr)
			continue
		}
		if p.Rates != tt.want {
			t.Errorf("Resolve(%q, %v) rates = %+v, want %+v", tt.model, tt.capped, p.Rates, tt.want)
		}
	}
}

func TestWithOverrides(t *testing.T) {
	base := DefaultPrices()
	cheap := Price{Model: "GPT-4o", Aliases: []string{"house-model"}, Rates: Rates{Input: 1, CachedInput: 1, Output: 2}}
	local := Price{Model: "llama-3-70b"}
	table, err := base.With(cheap, local)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		table PriceTable
		model string
		want  Rates
	}{
		{table, "gpt-4o", cheap.Rates},
		{table, "openai/gpt-4o-2024-08-06", cheap.Rates}, // normalisation reaches the override
		{table, "house-model", cheap.Rates},
		{table, "gpt-4o-2024-05-13", Rates{Input: 5_000, CachedInput: 5_000, Output: 15_000}}, // exact entry kept
		{table, "llama-3-70b", Rates{}},
		{base, "gpt-4o", gpt4o.Rates}, // the original table is unchanged
	}
	for _, tt := range tests {
		p, err := tt.table.Lookup(tt.model)
		if err != nil {
			t.Errorf("Lookup(%q): %v", tt.model, err)
			continue
		}
		if p.Rates != tt.want {
			t.Errorf("Lookup(%q) rates = %+v, want %+v", tt.model, p.Rates, tt.want)
		}
	}
	if _, err := base.Lookup("house-model"); !errors.Is(err, ErrNoPrice) {
		t.Errorf("alias leaked into the original table: err = %v", err)
	}
	if _, err := base.With(Price{Model: "bad", Rates: Rates{Input: 1, CachedInput: 2}}); err == nil {
		t.Error("With accepted a cached price above the input price")
	}
}

func TestParsePrices(t *testing.T) {
	good := `{"prices": [
	  {"model": "House", "aliases": ["house-v1"], "usd_per_mtok": {"input": 0.0375, "output": 1.2}},
	  {"model": "tiered", "usd_per_mtok": {"input": 1, "cached_input": 0.1, "output": 4},
	   "long_context": {"above_tokens": 1000, "usd_per_mtok": {"input": 2, "cached_input": 0.2, "output": 8}},
	   "source": "https://example.com/pricing", "as_of": "2026-01-02"}
	]}`
	prices, err := ParsePrices(strings.NewReader(good))
	if err != nil {
		t.Fatalf("ParsePrices: %v", err)
	}
	if len(prices) != 2 {
		t.Fatalf("got %d prices, want 2", len(prices))
	}
	house := prices[0]
	if house.Model != "house" || house.Rates != (Rates{Input: 38, CachedInput: 38, Output: 1_200}) {
		t.Errorf("house = %q %+v, want \"house\" with input rounded up to 38 and cached = input", house.Model, house.Rates)
	}
	lc := prices[1].LongContext
	if lc == nil || lc.Above != 1000 || lc.Rates != (Rates{Input: 2_000, CachedInput: 200, Output: 8_000}) {
		t.Errorf("long context = %+v, want above 1000 at 2000/200/8000", lc)
	}

	bad := []struct {
		name, file, wantErr string
	}{
		{"not json", `prices`, "parse price file"},
		{"unknown field", `{"prices": [{"model": "x", "usd_per_mtok": {"input": 1, "output": 1}, "cost": 3}]}`, "unknown field"},
		{"missing output", `{"prices": [{"model": "x", "usd_per_mtok": {"input": 1}}]}`, "input and an output"},
		{"negative", `{"prices": [{"model": "x", "usd_per_mtok": {"input": -1, "output": 1}}]}`, "negative"},
		{"duplicate", `{"prices": [{"model": "x", "usd_per_mtok": {"input": 1, "output": 1}},
			{"model": "y", "aliases": ["X"], "usd_per_mtok": {"input": 1, "output": 1}}]}`, "appears twice"},
		{"bad date", `{"prices": [{"model": "x", "usd_per_mtok": {"input": 1, "output": 1}, "as_of": "May 2025"}]}`, "as_of"},
		{"no name", `{"prices": [{"usd_per_mtok": {"input": 1, "output": 1}}]}`, "entry 1"},
		{"trailing data", `{"prices": []} {}`, "after the JSON"},
	}
	for _, tt := range bad {
		_, err := ParsePrices(strings.NewReader(tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: ParsePrices error = %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestDefaultPrices checks the embedded table: every model family the
// runner is expected to know is priced, and every entry says where and when
// its price was read.
func TestDefaultPrices(t *testing.T) {
	table := DefaultPrices()
	for _, model := range []string{
		"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o3", "o4-mini",
		"gpt-5", "gpt-5-mini", "gpt-5-nano",
		"claude-sonnet-4", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4", "claude-opus-4-1", "claude-opus-4-5",
		"gemini-2.5-pro", "gemini-2.5-flash", "deepseek-chat",
	} {
		if _, err := table.Lookup(model); err != nil {
			t.Errorf("Lookup(%q): %v", model, err)
		}
	}
	for _, name := range table.Models() {
		p, _ := table.Lookup(name)
		if u, err := url.Parse(p.Source); err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: source %q is not an https URL", name, p.Source)
		}
		d, err := time.Parse(time.DateOnly, p.AsOf)
		if err != nil || d.Year() < 2024 {
			t.Errorf("%s: as_of %q is not a plausible date", name, p.AsOf)
		}
		if p.Input == 0 || p.Output == 0 {
			t.Errorf("%s: rates %+v leave a side free", name, p.Rates)
		}
	}
	// Spot checks against the published figures, per million tokens.
	spot := []struct {
		model string
		want  Rates
	}{
		{"gpt-4o-mini", Rates{Input: 150, CachedInput: 75, Output: 600}},
		{"claude-sonnet-4-5", Rates{Input: 3_000, CachedInput: 300, Output: 15_000}},
		{"gemini-2.5-flash", Rates{Input: 300, CachedInput: 75, Output: 2_500}},
	}
	for _, s := range spot {
		if p, _ := table.Lookup(s.model); p.Rates != s.want {
			t.Errorf("%s rates = %+v, want %+v", s.model, p.Rates, s.want)
		}
	}
	if p, _ := table.Lookup("gemini-2.5-pro"); p.LongContext == nil || p.LongContext.Above != 200_000 {
		t.Errorf("gemini-2.5-pro has no long context tier above 200k tokens: %+v", p.LongContext)
	}
}
