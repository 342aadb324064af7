package budget

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// priceFile is the JSON form ParsePrices reads.
type priceFile struct {
	Note   string       `json:"note,omitempty"`
	Prices []priceEntry `json:"prices"`
}

type priceEntry struct {
	Model       string     `json:"model"`
	Aliases     []string   `json:"aliases,omitempty"`
	USDPerMTok  mtokPrices `json:"usd_per_mtok"`
	LongContext *struct {
		AboveTokens int64      `json:"above_tokens"`
		USDPerMTok  mtokPrices `json:"usd_per_mtok"`
	} `json:"long_context,omitempty"`
	Source    string `json:"source,omitempty"`
	AsOf      string `json:"as_of,omitempty"`
	Tokenizer string `json:"tokenizer,omitempty"`
}

type mtokPrices struct {
	Input       json.Number `json:"input"`
	CachedInput json.Number `json:"cached_input"`
	Output      json.Number `json:"output"`
}

//go:embed prices.json
var defaultPriceFile []byte

// DefaultPrices returns the built-in price table, read from the prices.json
// embedded in the program. Each entry names its source and date; prices
// change, so a user's price file (ParsePrices, PriceTable.With) wins.
func DefaultPrices() PriceTable { return defaultPrices() }

var defaultPrices = sync.OnceValue(func() PriceTable {
	prices, err := ParsePrices(bytes.NewReader(defaultPriceFile))
	if err == nil {
		var t PriceTable
		if t, err = NewPriceTable(prices...); err == nil {
			return t
		}
	}
	panic("budget: embedded prices.json: " + err.Error()) // the package tests load it
})

// ParsePrices reads a price file and returns its prices, validated. A price
// file is JSON:
//
//	{
//	  "prices": [
//	    {
//	      "model": "gpt-4o",
//	      "aliases": ["my-gpt"],
//	      "usd_per_mtok": {"input": 2.50, "cached_input": 1.25, "output": 10.00},
//	      "long_context": {"above_tokens": 200000,
//	                       "usd_per_mtok": {"input": 5, "cached_input": 2.5, "output": 15}},
//	      "source": "https://...",
//	      "as_of": "2025-08-07",
//	      "tokenizer": "o200k_base"
//	    }
//	  ]
//	}
//
// Prices are dollars per million tokens, read exactly as written and rounded
// up to a whole nanodollar per token. A missing cached_input means cached
// tokens cost the full input price. aliases, long_context, source, as_of
// and tokenizer are optional; as_of, when given, is a date YYYY-MM-DD;
// tokenizer names the model's public vocabulary (o200k_base, cl100k_base),
// with which its prompts are bounded more tightly than by their bytes
// (see Tokenizer); without it, or as "bytes", they are bounded by bytes.
//
// Unknown fields, a name given twice and a missing input or output price are
// errors, each naming the entry.
func ParsePrices(r io.Reader) ([]Price, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f priceFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse price file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parse price file: data after the JSON object")
	}
	seen := make(map[string]bool, len(f.Prices))
	prices := make([]Price, 0, len(f.Prices))
	for i, e := range f.Prices {
		p, err := e.price()
		if err != nil {
			return nil, fmt.Errorf("parse price file: entry %d (%q): %w", i+1, e.Model, err)
		}
		for _, name := range append([]string{p.Model}, p.Aliases...) {
			if seen[canonicalName(name)] {
				return nil, fmt.Errorf("parse price file: entry %d: name %q appears twice", i+1, name)
			}
			seen[canonicalName(name)] = true
		}
		prices = append(prices, p)
	}
	return prices, nil
}

func (e priceEntry) price() (Price, error) {
	p := Price{Model: canonicalName(e.Model), Aliases: e.Aliases, Source: e.Source, AsOf: e.AsOf}
	var err error
	if p.Tokenizer, err = ParseTokenizer(e.Tokenizer); err != nil {
		return Price{}, err
	}
	if p.Rates, err = e.USDPerMTok.rates(); err != nil {
		return Price{}, err
	}
	if lc := e.LongContext; lc != nil {
		r, err := lc.USDPerMTok.rates()
		if err != nil {
			return Price{}, fmt.Errorf("long context: %w", err)
		}
		p.LongContext = &LongContext{Above: lc.AboveTokens, Rates: r}
	}
	if p.AsOf != "" {
		if _, err := time.Parse(time.DateOnly, p.AsOf); err != nil {
			return Price{}, fmt.Errorf("as_of %q is not a date YYYY-MM-DD", p.AsOf)
		}
	}
	if err := p.Validate(); err != nil {
		return Price{}, err
	}
	return p, nil
}

func (m mtokPrices) rates() (Rates, error) {
	if m.Input == "" || m.Output == "" {
		return Rates{}, errors.New("usd_per_mtok needs an input and an output price")
	}
	var r Rates
	var err error
	if r.Input, err = rateFromDecimal(m.Input.String()); err != nil {
		return Rates{}, err
	}
	if r.Output, err = rateFromDecimal(m.Output.String()); err != nil {
		return Rates{}, err
	}
	r.CachedInput = r.Input
	if m.CachedInput != "" {
		if r.CachedInput, err = rateFromDecimal(m.CachedInput.String()); err != nil {
			return Rates{}, err
		}
	}
	return r, nil
}
