// Package order owns the pure rules of orders (spec: Order, Order status,
// Top-up order, Top-up settings): the types, statuses and sources, order
// numbers, CNY↔fen conversion, the upgrade proration and the top-up rules
// and settings validation. Its SQL is in internal/store/orders.go, its
// routes in internal/api/orders.go and internal/api/topup.go.
package order

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"
)

// Order types (spec: Order type).
const (
	TypePlan  = 1
	TypeTopup = 2
)

// Order statuses (spec: Order status).
const (
	StatusPending   = 0
	StatusPaid      = 1
	StatusCancelled = 2
	StatusRefunded  = 3
)

// Pay statuses (spec: Order pay_status).
const (
	PayPending  = 0
	PayPaid     = 1
	PayRefunded = -1
)

// Sources (*decision*, docs/decisions/commerce.md: the spec does not give
// the values): who created the order. Every order created through this
// API is self-service; SourceAdmin is kept for orders an operator creates
// for a user (no route yet) so the value is not reused.
const (
	SourceSelf  = 1
	SourceAdmin = 2
)

// Plan order modes (spec: POST /api/order/plan).
const (
	ModeStack     = "stack"
	ModePriceDiff = "price_diff"
)

// Order number prefixes (spec: Order order_no).
const (
	PrefixStack   = "TB"
	PrefixUpgrade = "UP"
	PrefixTopup   = "TP"
)

// NewOrderNo is prefix + the 14-digit UTC time yyyymmddhhmmss + 6 random
// digits: 22 characters, within the column's 32. Two orders in the same
// second collide with probability 1e-6; the store retries a collision.
func NewOrderNo(prefix string, now time.Time) string {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil { // crypto/rand does not fail on supported systems
		panic(fmt.Sprintf("order number: %v", err))
	}
	return fmt.Sprintf("%s%s%06d", prefix, now.UTC().Format("20060102150405"), n.Int64())
}

// MaxAmountCents bounds an order amount: 100 million CNY, far above any
// real order and far below where float64 CNY loses a fen.
const MaxAmountCents = 100_000_000 * 100

// ErrBadAmount refuses an amount that is NaN, infinite, negative or above
// MaxAmountCents.
var ErrBadAmount = errors.New("invalid amount")

// Cents converts CNY to fen, rounded to the nearest fen (half away from
// zero). NaN, ±Inf, a negative amount or one above MaxAmountCents give
// ErrBadAmount.
func Cents(cny float64) (int64, error) {
	if math.IsNaN(cny) || math.IsInf(cny, 0) || cny < 0 || cny > MaxAmountCents/100 {
		return 0, ErrBadAmount
	}
	return int64(math.Round(cny * 100)), nil
}

// CNY is fen as CNY for the API answer.
func CNY(cents int64) float64 { return float64(cents) / 100 }

// UpgradeCents is the price of an upgrade in fen (spec: POST
// /api/order/plan, price_diff; issue 26): the new plan's price minus the
// unused share of what was actually paid for the subscription it replaces,
// paid × remaining_seconds / length_seconds, where length is that
// subscription's end_time − start_time; never below 0. remaining is
// clamped to [0, length]. The residual is computed in exact integer
// fen-seconds and rounded once, half up, to the fen.
func UpgradeCents(newPriceCents, paidCents, remainingSeconds, lengthSeconds int64) int64 {
	if lengthSeconds <= 0 || paidCents <= 0 || remainingSeconds <= 0 {
		return max(newPriceCents, 0)
	}
	remainingSeconds = min(remainingSeconds, lengthSeconds)
	// big.Int: paid × seconds may exceed int64 for long plans.
	num := new(big.Int).Mul(big.NewInt(paidCents), big.NewInt(remainingSeconds))
	den := big.NewInt(lengthSeconds)
	// Round half up: (2·num + den) / (2·den).
	num.Mul(num, big.NewInt(2)).Add(num, den)
	residual := num.Quo(num, den.Mul(den, big.NewInt(2))).Int64()
	return max(newPriceCents-residual, 0)
}

// UpgradeToleranceCents is how much the price of an upgrade computed at
// activation may exceed the order's amount and still activate (0.01 CNY:
// the order was priced a moment earlier, and rounding differs by a fen).
const UpgradeToleranceCents = 1

// UpgradeStillCovered reports whether an upgrade order of amountCents
// still pays for the upgrade priced priceCents now.
func UpgradeStillCovered(priceCents, amountCents int64) bool {
	return priceCents <= amountCents+UpgradeToleranceCents
}

// WholeFen reports whether cny is a whole number of fen (a plan price
// must be: an order is charged in fen, so 0.005 CNY could not be sold).
func WholeFen(cny float64) bool {
	c, err := Cents(cny)
	return err == nil && math.Abs(float64(c)/100-cny) < 1e-9
}
