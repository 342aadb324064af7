package budget

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Nanodollars is an amount of money in billionths of a US dollar. All
// arithmetic in this package is done on it, so sums are exact; a sum that
// would overflow saturates at math.MaxInt64, which no cap can accommodate.
type Nanodollars int64

// NanodollarsPerUSD is the number of Nanodollars in one US dollar.
const NanodollarsPerUSD = 1_000_000_000

// USD returns the amount in dollars, for display and JSON only.
func (n Nanodollars) USD() float64 { return float64(n) / NanodollarsPerUSD }

// String formats the amount as dollars with at least two decimals and no
// trailing zeros beyond them, exactly: "$0.50", "$0.000012345".
func (n Nanodollars) String() string {
	sign := ""
	u := uint64(n)
	if n < 0 {
		sign = "-"
		u = uint64(-(n + 1)) + 1 // -MinInt64 does not fit in int64
	}
	whole, frac := u/NanodollarsPerUSD, u%NanodollarsPerUSD
	digits := strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
	for len(digits) < 2 {
		digits += "0"
	}
	return fmt.Sprintf("%s$%d.%s", sign, whole, digits)
}

// FromUSD converts a dollar amount, read as the shortest decimal that
// represents the float64 (so 0.3 is exactly 300,000,000 nanodollars), rounding
// toward zero to a whole nanodollar. Rounding down keeps a cap a cap.
func FromUSD(usd float64) (Nanodollars, error) {
	if math.IsNaN(usd) || math.IsInf(usd, 0) {
		return 0, fmt.Errorf("convert $%v: not a finite amount", usd)
	}
	n, err := scaleDecimal(strconv.FormatFloat(usd, 'f', -1, 64), NanodollarsPerUSD, false)
	if err != nil {
		return 0, fmt.Errorf("convert $%v: %w", usd, err)
	}
	return n, nil
}

// RateFromPerMillion converts a price in dollars per million tokens to a
// per-token rate, rounding up to a whole nanodollar so that a cost computed
// from the rate is never below the published one. Prices with up to three
// decimals ($0.075, $1.25) convert exactly.
func RateFromPerMillion(usdPerMillion float64) (Nanodollars, error) {
	if math.IsNaN(usdPerMillion) || math.IsInf(usdPerMillion, 0) {
		return 0, fmt.Errorf("convert $%v per million tokens: not a finite amount", usdPerMillion)
	}
	return rateFromDecimal(strconv.FormatFloat(usdPerMillion, 'f', -1, 64))
}

// rateFromDecimal is RateFromPerMillion for a decimal literal such as a JSON
// number, which it reads exactly.
func rateFromDecimal(usdPerMillion string) (Nanodollars, error) {
	n, err := scaleDecimal(usdPerMillion, NanodollarsPerUSD/1_000_000, true)
	if err != nil {
		return 0, fmt.Errorf("convert $%s per million tokens: %w", usdPerMillion, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("convert $%s per million tokens: negative price", usdPerMillion)
	}
	return n, nil
}

var errOutOfRange = errors.New("amount out of range")

// scaleDecimal returns the decimal literal s multiplied by scale, rounded up
// (toward +inf) or toward zero to an integer.
func scaleDecimal(s string, scale int64, roundUp bool) (Nanodollars, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(scale))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if roundUp && m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, errOutOfRange
	}
	return Nanodollars(q.Int64()), nil
}

// addSat returns a+b for non-negative amounts, saturating at MaxInt64.
func addSat(a, b Nanodollars) Nanodollars {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat returns tokens*rate for non-negative operands, saturating at
// MaxInt64.
func mulSat(tokens int64, rate Nanodollars) Nanodollars {
	if tokens == 0 || rate == 0 {
		return 0
	}
	if tokens > math.MaxInt64/int64(rate) {
		return math.MaxInt64
	}
	return Nanodollars(tokens) * rate
}
