package budget

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ErrNoPrice is returned for a model the price table does not know. A run
// with a budget must stop on it before any call is made.
var ErrNoPrice = errors.New("no price")

// PriceTable maps model names to prices. It is immutable, so one table can be
// shared by concurrent tasks; With returns a modified copy.
type PriceTable struct {
	prices  map[string]Price  // by canonical name
	aliases map[string]string // alias -> canonical name
}

// NewPriceTable returns a table of the given prices; a later price for the
// same model name replaces an earlier one.
func NewPriceTable(prices ...Price) (PriceTable, error) {
	return PriceTable{}.With(prices...)
}

// With returns a copy of t in which the given prices replace any existing
// price for the same model name (overrides from configuration or a price
// file). The aliases of an override point to it; an alias that was a model
// name of its own keeps resolving to that model, since exact names win.
func (t PriceTable) With(overrides ...Price) (PriceTable, error) {
	out := PriceTable{
		prices:  make(map[string]Price, len(t.prices)+len(overrides)),
		aliases: make(map[string]string, len(t.aliases)),
	}
	for k, v := range t.prices {
		out.prices[k] = v
	}
	for k, v := range t.aliases {
		out.aliases[k] = v
	}
	for _, p := range overrides {
		if err := p.Validate(); err != nil {
			return PriceTable{}, err
		}
		p.Model = canonicalName(p.Model)
		p.Aliases = slices.Clone(p.Aliases)
		for i, a := range p.Aliases {
			p.Aliases[i] = canonicalName(a)
			out.aliases[p.Aliases[i]] = p.Model
		}
		out.prices[p.Model] = p
	}
	return out, nil
}

// Models returns the canonical names in the table, sorted.
func (t PriceTable) Models() []string {
	names := make([]string, 0, len(t.prices))
	for k := range t.prices {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the price of a model. The name is matched, ignoring case
// and surrounding space, in this order:
//
//  1. as given ("gpt-4o", "claude-sonnet-4.5");
//  2. without a provider prefix, everything up to the last slash
//     ("openai/gpt-4o", "models/gemini-2.5-pro");
//  3. without a dated snapshot suffix ("gpt-4o-2024-08-06",
//     "claude-sonnet-4-5-20250929").
//
// Each step tries model names before aliases. A snapshot priced unlike its
// family must therefore have its own entry, as gpt-4o-2024-05-13 has.
// A name that matches nothing gives an error wrapping ErrNoPrice that says
// how to supply the price.
func (t PriceTable) Lookup(model string) (Price, error) {
	name := canonicalName(model)
	candidates := []string{name}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
		candidates = append(candidates, name)
	}
	if undated := snapshotSuffix.ReplaceAllString(name, ""); undated != name {
		candidates = append(candidates, undated)
	}
	for _, c := range candidates {
		if p, ok := t.prices[c]; ok {
			return p, nil
		}
		if canon, ok := t.aliases[c]; ok {
			if p, ok := t.prices[canon]; ok {
				return p, nil
			}
		}
	}
	return Price{}, fmt.Errorf("%w for model %q: give its price in USD per million input, cached-input and output tokens in a price file", ErrNoPrice, model)
}

// Resolve is Lookup for the start of a run. Without a budget
// (capped == false) an unknown model is allowed and gets a zero price, so
// tokens are still counted; with a budget it is an error wrapping ErrNoPrice,
// because spending could not be bounded.
func (t PriceTable) Resolve(model string, capped bool) (Price, error) {
	p, err := t.Lookup(model)
	if err != nil && !capped && errors.Is(err, ErrNoPrice) {
		return Price{Model: canonicalName(model)}, nil
	}
	return p, err
}

// snapshotSuffix matches the date OpenAI (-2024-08-06) and Anthropic
// (-20250929) append to a model name to pin a snapshot.
var snapshotSuffix = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8})$`)

func canonicalName(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
