package logtext

import (
	"math"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/msgtext"
)

// quotaPerUnit is how much quota makes one CNY (pricing.QuotaPerUnit;
// pricing sits above this package, so the value is repeated).
const quotaPerUnit = 1_000_000

// Money is quota in CNY as the console shows it: "¥1,234.50", up to six
// decimals (a relay call costs fractions of a fen), at least two. zh and
// en write numbers alike (CLDR: "," groups thousands, "." is the decimal
// point); lang is taken so that a language that differs can be added.
func Money(lang msgtext.Lang, q int64) string {
	sign := ""
	u := uint64(q)
	if q < 0 {
		sign, u = "-", uint64(-(q+1))+1 // MinInt64 too
	}
	whole, frac := u/quotaPerUnit, u%quotaPerUnit
	digits := strings.TrimRight(strconv.FormatUint(frac+quotaPerUnit, 10)[1:], "0")
	for len(digits) < 2 {
		digits += "0"
	}
	return sign + "¥" + group(strconv.FormatUint(whole, 10)) + "." + digits
}

// Count is an integer in lang's format: "1,234,567".
func Count(lang msgtext.Lang, n int64) string {
	if n < 0 {
		return "-" + group(strconv.FormatUint(uint64(-(n+1))+1, 10))
	}
	return group(strconv.FormatInt(n, 10))
}

// Decimal is a number written in a row ("2", "0.15", "2.5e-05")
// in lang's format, in positional notation with its integer part grouped;
// text that is not a finite number is returned as it is.
func Decimal(lang msgtext.Lang, s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return s
	}
	out := strconv.FormatFloat(f, 'f', -1, 64)
	sign := ""
	if strings.HasPrefix(out, "-") {
		sign, out = "-", out[1:]
	}
	intPart, rest, hasFrac := strings.Cut(out, ".")
	if hasFrac {
		return sign + group(intPart) + "." + rest
	}
	return sign + group(intPart)
}

// group puts "," between thousands of a run of digits.
func group(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	first := len(digits) % 3
	if first > 0 {
		b.WriteString(digits[:first])
	}
	for i := first; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}
