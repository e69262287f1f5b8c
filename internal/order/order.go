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

// UpgradeCents is the price of an upgrade in fen (spec: POST /api/order/plan,
// price_diff): the new plan's price minus the residual value of the
// subscription it replaces, old_price × remaining_seconds / (duration_days ×
// 86400), never below 0. remaining is clamped to [0, duration]. The residual
// is computed in exact integer fen-seconds and rounded once to the fen.
func UpgradeCents(newPriceCents, oldPriceCents, remainingSeconds int64, oldDurationDays int) int64 {
	if oldDurationDays <= 0 || oldPriceCents <= 0 || remainingSeconds <= 0 {
		return max(newPriceCents, 0)
	}
	total := int64(oldDurationDays) * 86400
	remainingSeconds = min(remainingSeconds, total)
	// big.Int: price × seconds may exceed int64 for long plans.
	num := new(big.Int).Mul(big.NewInt(oldPriceCents), big.NewInt(remainingSeconds))
	den := big.NewInt(total)
	// Round half up: (2·num + den) / (2·den).
	num.Mul(num, big.NewInt(2)).Add(num, den)
	residual := num.Quo(num, den.Mul(den, big.NewInt(2))).Int64()
	return max(newPriceCents-residual, 0)
}
