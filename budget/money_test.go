package budget

import (
	"math"
	"testing"
)

func TestNanodollarsString(t *testing.T) {
	tests := []struct {
		n    Nanodollars
		want string
	}{
		{0, "$0.00"},
		{500_000_000, "$0.50"},
		{1_000_000_000, "$1.00"},
		{12_345, "$0.000012345"},
		{2_500_000_001, "$2.500000001"},
		{-1_500_000_000, "-$1.50"},
		{math.MinInt64, "-$9223372036.854775808"},
	}
	for _, tt := range tests {
		if got := tt.n.String(); got != tt.want {
			t.Errorf("Nanodollars(%d).String() = %q, want %q", int64(tt.n), got, tt.want)
		}
	}
}

func TestFromUSD(t *testing.T) {
	tests := []struct {
		usd     float64
		want    Nanodollars
		wantErr bool
	}{
		{0, 0, false},
		{0.3, 300_000_000, false}, // float64(0.3)*1e9 would give 299999999.99999994
		{0.1 + 0.2, 300_000_000, false},
		{10, 10_000_000_000, false},
		{1.0000000019, 1_000_000_001, false}, // below a nanodollar: rounded down
		{-2.5, -2_500_000_000, false},
		{math.NaN(), 0, true},
		{math.Inf(1), 0, true},
		{1e12, 0, true}, // beyond int64 nanodollars
	}
	for _, tt := range tests {
		got, err := FromUSD(tt.usd)
		if (err != nil) != tt.wantErr {
			t.Errorf("FromUSD(%v) error = %v, want error %v", tt.usd, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("FromUSD(%v) = %d, want %d", tt.usd, got, tt.want)
		}
	}
}

func TestRateFromPerMillion(t *testing.T) {
	tests := []struct {
		perMillion float64
		want       Nanodollars
		wantErr    bool
	}{
		{2.5, 2_500, false},
		{0.075, 75, false},
		{0.005, 5, false},
		{0.0375, 38, false}, // $0.0000000375 a token rounds up, never down
		{0.0001, 1, false},  // a tiny price is not free
		{1e-20, 1, false},   // however tiny
		{0, 0, false},
		{150, 150_000, false},
		{-1, 0, true},
		{math.NaN(), 0, true},
	}
	for _, tt := range tests {
		got, err := RateFromPerMillion(tt.perMillion)
		if (err != nil) != tt.wantErr {
			t.Errorf("RateFromPerMillion(%v) error = %v, want error %v", tt.perMillion, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("RateFromPerMillion(%v) = %d, want %d", tt.perMillion, got, tt.want)
		}
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	const maxN = Nanodollars(math.MaxInt64)
	tests := []struct {
		name string
		got  Nanodollars
		want Nanodollars
	}{
		{"add", addSat(2, 3), 5},
		{"add at the limit", addSat(maxN-1, 1), maxN},
		{"add over the limit", addSat(maxN-1, 2), maxN},
		{"mul", mulSat(1_000, 2_500), 2_500_000},
		{"mul by zero tokens", mulSat(0, maxN), 0},
		{"mul over the limit", mulSat(math.MaxInt64/2+1, 2), maxN},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}
