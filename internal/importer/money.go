package importer

import (
	"fmt"
	"math/big"
	"strings"
)

// DefaultQuotaPerUnit is one-api's and new-api's quota per USD (their
// QuotaPerUnit; new-api's options may change it).
const DefaultQuotaPerUnit = 500000

// quotaPerCNY is modelgate's quota per CNY.
const quotaPerCNY = 1_000_000

// Converter turns a source system's quota into modelgate's:
// round(q / quotaPerUnit × RATE × 1,000,000), computed exactly on rationals
// (a float64 loses units above 2^53, and balances reach that).
type Converter struct {
	factor *big.Rat // RATE × 1e6 / quotaPerUnit
	rate   *big.Rat
	qpu    *big.Rat
}

// ParseRate reads a positive decimal such as "7.2" (CNY per USD).
func ParseRate(s string) (*big.Rat, error) {
	return parsePositive("--cny-per-usd", s)
}

func parsePositive(label, s string) (*big.Rat, error) {
	s = strings.TrimSpace(s)
	r, ok := new(big.Rat).SetString(s)
	if !ok || s == "" || strings.ContainsAny(s, "/eE") {
		return nil, fmt.Errorf("%s: %q is not a decimal number", label, s)
	}
	if r.Sign() <= 0 {
		return nil, fmt.Errorf("%s: %q must be above 0", label, s)
	}
	if r.Cmp(big.NewRat(1_000_000, 1)) > 0 {
		return nil, fmt.Errorf("%s: %q is above 1000000", label, s)
	}
	return r, nil
}

// NewConverter is the converter for rate (CNY per USD) and the source's
// quota per USD.
func NewConverter(rate, quotaPerUnit *big.Rat) Converter {
	f := new(big.Rat).Mul(rate, big.NewRat(quotaPerCNY, 1))
	f.Quo(f, quotaPerUnit)
	return Converter{factor: f, rate: rate, qpu: quotaPerUnit}
}

// Quota converts q, rounding half away from zero, and clamps the result to
// [lo, hi]; clamped tells whether it had to.
func (c Converter) Quota(q, lo, hi int64) (v int64, clamped bool) {
	r := new(big.Rat).Mul(new(big.Rat).SetInt64(q), c.factor)
	n := roundRat(r)
	switch {
	case n.Cmp(big.NewInt(hi)) > 0:
		return hi, true
	case n.Cmp(big.NewInt(lo)) < 0:
		return lo, true
	}
	return n.Int64(), false
}

// PerMillionCNY is the CNY price per million tokens of a source model
// ratio: a call of T tokens costs T × ratio source quota there, so the same
// call costs the same converted quota here (ratio 1 = 0.002 USD per 1K
// tokens at 500,000 quota per USD).
func (c Converter) PerMillionCNY(ratio float64) float64 {
	r := new(big.Rat)
	if r.SetFloat64(ratio) == nil {
		return 0
	}
	r.Mul(r, c.factor) // modelgate quota per token
	f, _ := r.Float64()
	return f // quota per token × 1e6 tokens / 1e6 quota per CNY
}

// USDToCNY converts a price in USD (new-api's fixed per-request prices).
func (c Converter) USDToCNY(usd float64) float64 {
	r := new(big.Rat)
	if r.SetFloat64(usd) == nil {
		return 0
	}
	f, _ := r.Mul(r, c.rate).Float64()
	return f
}

// roundRat rounds r to the nearest integer, halves away from zero.
func roundRat(r *big.Rat) *big.Int {
	num := new(big.Int).Abs(r.Num())
	q, rem := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	if rem.Lsh(rem, 1).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return q
}
