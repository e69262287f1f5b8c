// Package payment owns the payment channels of orders (spec: Payment
// channel configuration, Top-up order's pay answer): the channel names,
// each channel's configuration, the pre-payment answer a client pays with,
// and the verified notification that marks an order paid. The providers'
// wire protocols live in subpackages (wechat: mobile_a, WeChat Pay API v2
// XML; alipay: mobile_b, Alipay RSA2); bank needs no protocol.
//
// Each wallet provider implements two interfaces: Provider, the payment
// itself (Prepay, Notify, Reply), and Trades, the calls after it (Close an
// unpaid trade, Query a trade's state, Refund a paid one) with
// provider-neutral answers (Trade, Refunded, ErrTradePaid,
// ErrTradeNotFound, ProviderError). Trades is found by type assertion on a
// Provider. Package paytest holds fakes of both providers' HTTP APIs for
// tests. docs/payments.md, "Provider calls", says what each call sends and
// what its answers mean.
package payment

import (
	"context"
	"errors"
	"net/http"
)

// Payment methods (spec: Order pay_method). Self-service orders may use
// the three channels; an admin marking an order paid may also use offline
// and free.
const (
	MethodWechat  = "mobile_a"
	MethodAlipay  = "mobile_b"
	MethodBank    = "bank"
	MethodOffline = "offline"
	MethodFree    = "free"
)

// Channels are the configurable payment channels, in display order.
var Channels = []string{MethodWechat, MethodAlipay, MethodBank}

// Pay is the pay answer of an order (spec: Top-up order, pay fields).
type Pay struct {
	Status   string `json:"status"` // PayReady or PayWarning
	PayURL   string `json:"pay_url"`
	QRCode   string `json:"qr_code"`
	ExpireAt int64  `json:"expire_at"`
	TradeNo  string `json:"trade_no"`
	Note     string `json:"note,omitempty"`
	Warning  string `json:"warning,omitempty"`
}

// Pay statuses.
const (
	PayReady   = "success"
	PayWarning = "warning"
)

// Prepay is what a channel needs to start paying an order.
type Prepay struct {
	OrderNo     string
	AmountCents int64  // fen
	Subject     string // what is bought, shown by the wallet
	ClientIP    string
}

// Paid is a verified payment notification: the provider says the order
// OrderNo was paid AmountCents (fen) under its transaction TradeNo.
type Paid struct {
	Method      string
	OrderNo     string
	AmountCents int64
	TradeNo     string
}

// Activator marks a pending order paid and activates it (credits a
// top-up, starts a subscription) exactly once. A notification whose order
// is unknown, whose amount differs, or whose order is not pending (paid
// already, cancelled, refunded) changes nothing: ErrUnknownOrder,
// ErrAmountMismatch, or nil for a repeat of a paid order with the same
// method (the provider retries until it hears success), ErrNotPending
// otherwise.
type Activator func(ctx context.Context, p Paid) error

// Errors of an activation.
var (
	ErrUnknownOrder   = errors.New("unknown order")
	ErrAmountMismatch = errors.New("paid amount differs from the order amount")
	ErrNotPending     = errors.New("order is not pending")
)

// WechatConfig is mobile_a's configuration (spec: Payment channel
// configuration). Gateway is the API base URL (default
// https://api.mch.weixin.qq.com; tests point it at a fake).
type WechatConfig struct {
	AppID     string `json:"app_id"`
	MchID     string `json:"mch_id"`
	APIKey    string `json:"api_key"`
	SignType  string `json:"sign_type,omitempty"` // MD5 (default) or HMAC-SHA256
	NotifyURL string `json:"notify_url"`
	CertFile  string `json:"cert_file,omitempty"`
	KeyFile   string `json:"key_file,omitempty"`
	Gateway   string `json:"gateway,omitempty"`
}

// AlipayConfig is mobile_b's configuration. The keys are PEM text, or read
// from the *_file paths (uploaded PEM files). Gateway defaults to the
// production gateway https://openapi.alipay.com/gateway.do.
type AlipayConfig struct {
	AppID          string `json:"app_id"`
	PrivateKey     string `json:"private_key,omitempty"`
	PrivateKeyFile string `json:"private_key_file,omitempty"`
	PublicKey      string `json:"public_key,omitempty"`
	PublicKeyFile  string `json:"public_key_file,omitempty"`
	Gateway        string `json:"gateway,omitempty"`
	NotifyURL      string `json:"notify_url"`
}

// BankConfig is the bank transfer channel's configuration: the transfer
// instructions shown in pay.note.
type BankConfig struct {
	AccountName string `json:"account_name"`
	AccountNo   string `json:"account_no"`
	BankName    string `json:"bank_name"`
	Branch      string `json:"branch"`
	Notes       string `json:"notes"`
}

// Provider is a wallet channel's protocol (mobile_a, mobile_b): config is
// the channel's stored configuration (JSON: WechatConfig, AlipayConfig).
type Provider interface {
	// Prepay asks the provider to start a payment of p and answers the pay
	// fields (pay_url, qr_code, trade_no, expire_at) with Status PayReady.
	// An error says why it could not (the order then answers PayWarning).
	Prepay(ctx context.Context, config []byte, p Prepay) (Pay, error)
	// Notify reads and verifies the provider's payment notification r
	// under config: its signature, that it is for this merchant or app, and
	// that it reports a successful payment. Only a verified payment is
	// returned; anything else is an error (logged, nothing changes).
	Notify(r *http.Request, config []byte) (Paid, error)
	// Reply answers the provider: success when ok (it stops retrying),
	// failure otherwise, in the provider's format.
	Reply(w http.ResponseWriter, ok bool)
}
