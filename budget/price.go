package budget

import (
	"errors"
	"fmt"
	"strings"
)

// Rates are per-token prices.
type Rates struct {
	Input       Nanodollars
	CachedInput Nanodollars
	Output      Nanodollars
}

// LongContext is a second price tier that some providers apply to every
// token of a request whose prompt is longer than Above tokens.
type LongContext struct {
	Above int64
	Rates
}

// Price is what one model costs.
//
// Only text tokens are priced: image or audio input billed at other rates is
// not covered, nor are prompt-cache writes billed above the input price.
type Price struct {
	// Model is the canonical name, lower case.
	Model string
	// Aliases are other names the model is called by ("claude-sonnet-4.5").
	Aliases []string
	Rates
	// LongContext, when not nil, replaces Rates for long prompts.
	LongContext *LongContext
	// Tokenizer is the vocabulary the model counts tokens with, when it is
	// public and fixed; TokenizerBytes bounds its prompts by their bytes.
	Tokenizer Tokenizer
	// Source is where the price was published; AsOf the date (YYYY-MM-DD)
	// on which it is known to have been the published price.
	Source string
	AsOf   string
}

// RatesFor returns the rates that apply to a request whose prompt has
// promptTokens tokens.
func (p Price) RatesFor(promptTokens int64) Rates {
	if p.LongContext != nil && promptTokens > p.LongContext.Above {
		return p.LongContext.Rates
	}
	return p.Rates
}

// Cost returns what a call with usage u costs. Counts that make no sense are
// read the only way they can be: negatives as zero, and cached tokens beyond
// the prompt as the whole prompt cached.
func (p Price) Cost(u Usage) Nanodollars {
	u = u.normalized()
	r := p.RatesFor(u.PromptTokens)
	c := mulSat(u.PromptTokens-u.CachedTokens, r.Input)
	c = addSat(c, mulSat(u.CachedTokens, r.CachedInput))
	return addSat(c, mulSat(u.CompletionTokens, r.Output))
}

// Bound returns an upper bound of the cost of any call whose prompt has at
// most promptTokens tokens (whatever part of it is cached) and whose
// completion has at most completionTokens tokens. It holds for a validated
// Price because the cached rate is at most the input rate and the long
// context tier is at least the base tier.
func (p Price) Bound(promptTokens, completionTokens int64) Nanodollars {
	promptTokens, completionTokens = max(promptTokens, 0), max(completionTokens, 0)
	r := p.RatesFor(promptTokens)
	return addSat(mulSat(promptTokens, r.Input), mulSat(completionTokens, r.Output))
}

// Validate reports whether p is usable: a model name, no negative rate, a
// cached rate no higher than the input rate, and a long-context tier, if any,
// with a positive threshold and no rate lower than the base tier's. These
// are the conditions under which Bound bounds Cost.
func (p Price) Validate() error {
	var errs []error
	if strings.TrimSpace(p.Model) == "" {
		errs = append(errs, errors.New("no model name"))
	}
	errs = append(errs, p.Rates.validate("")...)
	if p.Tokenizer != TokenizerBytes && !p.Tokenizer.Known() {
		errs = append(errs, fmt.Errorf("unknown tokenizer %q", p.Tokenizer))
	}
	if lc := p.LongContext; lc != nil {
		if lc.Above <= 0 {
			errs = append(errs, fmt.Errorf("long context threshold %d is not positive", lc.Above))
		}
		errs = append(errs, lc.Rates.validate("long context ")...)
		if lc.Input < p.Input || lc.CachedInput < p.CachedInput || lc.Output < p.Output {
			errs = append(errs, errors.New("long context rates are lower than the base rates"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("price of %q: %w", p.Model, err)
	}
	return nil
}

func (r Rates) validate(tier string) []error {
	var errs []error
	if r.Input < 0 || r.CachedInput < 0 || r.Output < 0 {
		errs = append(errs, fmt.Errorf("%srates include a negative price", tier))
	}
	if r.CachedInput > r.Input {
		errs = append(errs, fmt.Errorf("%scached input price %s is above the input price %s per token", tier, r.CachedInput, r.Input))
	}
	return errs
}
