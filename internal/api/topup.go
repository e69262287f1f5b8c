package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the top-up endpoints the spec does not fix.
const (
	MsgTopupNotLoggedIn = "未登录" // spec: top-up order, not logged in
	MsgTopupSaved       = "已保存"
	MsgTopupLowRate     = "已保存。注意:兑换比例 %d 远低于 1 元 = %d 额度,自定义金额充值 1 元只到账 %d 额度;建议设为 %d"
)

// topupResponse is the top-up order answer (spec: Top-up order): the
// fields sit at the top level next to success and message.
type topupResponse struct {
	Success    bool        `json:"success"`
	Message    string      `json:"message"`
	Order      orderView   `json:"order"`
	Amount     float64     `json:"amount"`
	BonusQuota int64       `json:"bonus_quota"`
	Pay        payment.Pay `json:"pay"`
}

// requireLogin is requireRole(levelUser) answering the spec's top-up
// message 未登录 when the request carries no credentials at all.
func (s *Server) requireLogin(next httpx.HandlerFunc) httpx.HandlerFunc {
	inner := s.requireRole(levelUser, next)
	return func(w http.ResponseWriter, r *http.Request) error {
		err := inner(w, r)
		var he *httpx.Error
		if errors.As(err, &he) && he.Message == MsgNotLoggedIn {
			return httpx.FailStatus(http.StatusUnauthorized, MsgTopupNotLoggedIn)
		}
		return err
	}
}

// createTopupOrder creates a pending top-up order (spec: Top-up order,
// rules 1–4) and starts its payment: commerce.Service.CreateTopupOrder.
func (s *Server) createTopupOrder(w http.ResponseWriter, r *http.Request) error {
	var req order.TopupRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	placed, err := s.Commerce.CreateTopupOrder(r.Context(), payer(r), req)
	if err != nil {
		return commerceError(err)
	}
	o := placed.Order
	return httpx.WriteJSON(w, http.StatusOK, topupResponse{Success: true, Order: viewOrder(&o),
		Amount: order.CNY(o.AmountCents), BonusQuota: o.BonusQuota, Pay: *placed.Pay})
}

// topupSettingsView is the settings answer, with the quota unit so the
// meaning of exchange_rate is visible (1 CNY = quota_per_unit quota).
// Warnings list what the settings sell for less than they charge (a
// preset crediting 0 or less than amount × rate, a rate of 1), so a
// script sees what the console shows.
type topupSettingsView struct {
	order.Settings
	QuotaPerUnit int64    `json:"quota_per_unit"`
	Warnings     []string `json:"warnings"`
}

func viewTopupSettings(r *http.Request, st order.Settings) topupSettingsView {
	warnings := []string{}
	for _, w := range st.Warnings() {
		warnings = append(warnings, msgtext.Render(httpx.Lang(r), w.Format, w.Args...))
	}
	return topupSettingsView{Settings: st, QuotaPerUnit: pricing.QuotaPerUnit, Warnings: warnings}
}

func (s *Server) getTopupSettings(w http.ResponseWriter, r *http.Request) error {
	return httpx.OK(w, viewTopupSettings(r, s.Options.Current().Topup))
}

type topupSettingsRequest struct {
	Enabled      bool           `json:"enabled"`
	AllowCustom  bool           `json:"allow_custom"`
	ExchangeRate *int64         `json:"exchange_rate"`
	Presets      []order.Preset `json:"presets"`
}

// updateTopupSettings saves the four topup.* settings together (spec: Top-up
// settings (Root)): every check first, then one transaction; the list
// replaces the old one. A field left out takes its default (false, rate
// 1, no presets).
func (s *Server) updateTopupSettings(w http.ResponseWriter, r *http.Request) error {
	var req topupSettingsRequest
	if err := httpx.DecodeStrictPinned(w, r, &req); err != nil {
		return err
	}
	st := order.Settings{Enabled: req.Enabled, AllowCustom: req.AllowCustom, ExchangeRate: 1, Presets: req.Presets}
	if req.ExchangeRate != nil {
		st.ExchangeRate = *req.ExchangeRate
	}
	if st.Presets == nil {
		st.Presets = []order.Preset{}
	}
	if p := st.Validate(); p != nil {
		if len(p.Args) > 0 {
			return httpx.Failf(p.Format, p.Args...)
		}
		return httpx.Fail(p.Format)
	}
	presets, _ := json.Marshal(st.Presets)
	err := s.Options.SetMany(r.Context(), map[string]string{
		option.TopupEnabled:      strconv.FormatBool(st.Enabled),
		option.TopupAllowCustom:  strconv.FormatBool(st.AllowCustom),
		option.TopupExchangeRate: strconv.FormatInt(st.ExchangeRate, 10),
		option.TopupPresets:      string(presets),
	})
	var invalid *option.InvalidError
	if errors.As(err, &invalid) {
		return httpx.Fail(invalid.Message)
	}
	if err != nil {
		return err
	}
	me := caller(r)
	s.Logs.Write(store.Log{UserID: me.ID, Username: me.Username, Type: store.LogAdmin,
		Content: fmt.Sprintf(logtext.AdminTopupSettings, me.Username)})
	// The answer's data is the settings as saved, with their warnings.
	msg := msgtext.Message(httpx.Lang(r), MsgTopupSaved)
	if st.AllowCustom && st.ExchangeRate < order.LowRate {
		bonus, _ := order.CustomBonus(100, st.ExchangeRate)
		msg = msgtext.Render(httpx.Lang(r), MsgTopupLowRate, st.ExchangeRate, pricing.QuotaPerUnit, bonus, pricing.QuotaPerUnit)
	}
	return httpx.WriteJSON(w, http.StatusOK, httpx.Envelope{Success: true, Message: msg, Data: viewTopupSettings(r, st)})
}
