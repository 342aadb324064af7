package budget

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// gpt4o is $2.50 / $1.25 / $10.00 per million tokens.
var gpt4o = Price{Model: "gpt-4o", Rates: Rates{Input: 2_500, CachedInput: 1_250, Output: 10_000}}

// tiered is $1.25 / $0.31 / $10 per million up to 200k prompt tokens and
// $2.50 / $0.625 / $15 above.
var tiered = Price{
	Model: "tiered",
	Rates: Rates{Input: 1_250, CachedInput: 310, Output: 10_000},
	LongContext: &LongContext{Above: 200_000,
		Rates: Rates{Input: 2_500, CachedInput: 625, Output: 15_000}},
}

func TestUsageAdd(t *testing.T) {
	got := Usage{10, 4, 7}.Add(Usage{5, 1, 3})
	if want := (Usage{15, 5, 10}); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}

func TestPriceCost(t *testing.T) {
	tests := []struct {
		name  string
		price Price
		usage Usage
		want  Nanodollars
	}{
		{"nothing", gpt4o, Usage{}, 0},
		{"one million prompt tokens", gpt4o, Usage{PromptTokens: 1_000_000}, 2_500_000_000},
		{"one million completion tokens", gpt4o, Usage{CompletionTokens: 1_000_000}, 10_000_000_000},
		// 600 uncached at 2500 + 400 cached at 1250 + 50 out at 10000
		{"cached part of the prompt", gpt4o, Usage{1_000, 400, 50}, 600*2_500 + 400*1_250 + 50*10_000},
		{"all cached", gpt4o, Usage{1_000, 1_000, 0}, 1_000 * 1_250},
		{"cached beyond prompt counts as all cached", gpt4o, Usage{100, 500, 0}, 100 * 1_250},
		{"negative counts read as zero", gpt4o, Usage{-5, -1, -9}, 0},
		{"base tier at the threshold", tiered, Usage{200_000, 0, 1_000}, 200_000*1_250 + 1_000*10_000},
		{"long tier above the threshold", tiered, Usage{200_001, 1, 1_000}, 200_000*2_500 + 1*625 + 1_000*15_000},
	}
	for _, tt := range tests {
		if got := tt.price.Cost(tt.usage); got != tt.want {
			t.Errorf("%s: Cost(%+v) = %d, want %d", tt.name, tt.usage, got, tt.want)
		}
	}
}

// TestPriceBoundCoversCost checks the property the meter relies on: any
// usage within a prompt bound and a completion limit costs at most Bound.
func TestPriceBoundCoversCost(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := range 20_000 {
		p := randomPrice(rng)
		promptBound := rng.Int64N(400_000)
		completion := rng.Int64N(100_000)
		u := Usage{PromptTokens: rng.Int64N(promptBound + 1), CompletionTokens: rng.Int64N(completion + 1)}
		u.CachedTokens = rng.Int64N(u.PromptTokens + 1)
		if cost, bound := p.Cost(u), p.Bound(promptBound, completion); cost > bound {
			t.Fatalf("case %d: %+v costs %d under %+v, above its bound %d for (%d, %d)", i, u, cost, p, bound, promptBound, completion)
		}
	}
}

func TestPriceValidate(t *testing.T) {
	tests := []struct {
		name    string
		price   Price
		wantErr string
	}{
		{"valid flat", gpt4o, ""},
		{"valid tiered", tiered, ""},
		{"free", Price{Model: "local"}, ""},
		{"no name", Price{Rates: gpt4o.Rates}, "no model name"},
		{"negative", Price{Model: "x", Rates: Rates{Input: -1}}, "negative"},
		{"cached above input", Price{Model: "x", Rates: Rates{Input: 10, CachedInput: 11}}, "cached input price"},
		{"long tier cheaper", Price{Model: "x", Rates: Rates{Input: 10, Output: 10},
			LongContext: &LongContext{Above: 5, Rates: Rates{Input: 9, Output: 10}}}, "lower than the base"},
		{"long tier without threshold", Price{Model: "x",
			LongContext: &LongContext{Rates: Rates{Input: 9}}}, "threshold 0"},
	}
	for _, tt := range tests {
		err := tt.price.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.wantErr)
		}
	}
}

// randomPrice returns a valid price with rates up to $200 per million
// tokens, tiered half of the time.
func randomPrice(rng *rand.Rand) Price {
	in := Nanodollars(rng.Int64N(200_000))
	p := Price{Model: "random", Rates: Rates{
		Input:       in,
		CachedInput: Nanodollars(rng.Int64N(int64(in) + 1)),
		Output:      Nanodollars(rng.Int64N(200_000)),
	}}
	if rng.IntN(2) == 0 {
		lin := p.Input + Nanodollars(rng.Int64N(100_000))
		p.LongContext = &LongContext{Above: 1 + rng.Int64N(300_000), Rates: Rates{
			Input:       lin,
			CachedInput: p.CachedInput + Nanodollars(rng.Int64N(int64(lin-p.CachedInput)+1)),
			Output:      p.Output + Nanodollars(rng.Int64N(100_000)),
		}}
	}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return p
}
