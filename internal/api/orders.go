package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Messages of the order endpoints (the spec does not fix them).
const (
	MsgOrderNotFound      = "订单不存在"
	MsgOrderNotPending    = "订单不是待支付状态"
	MsgOrderModeInvalid   = "mode 只能是 stack 或 price_diff"
	MsgOrderPlanUnlisted  = "套餐不存在或已下架"
	MsgOrderStatusInvalid = "status 只能是 1(已支付)或 3(已退款)"
	MsgOrderAmountTooHigh = "套餐价格超出订单金额上限"
	MsgOrderStatusQuery   = "参数 status 只能是 0 到 3"
)

var payTradeNoText = textfield.Field{Label: "pay_trade_no", MaxChars: 128}

// orderView is an order as answers show it: amount in CNY (stored in fen).
type orderView struct {
	ID         int64   `json:"id"`
	Type       int     `json:"type"`
	Source     int     `json:"source"`
	OrderNo    string  `json:"order_no"`
	UserID     int64   `json:"user_id"`
	PlanID     int64   `json:"plan_id"`
	PlanInfo   string  `json:"plan_info"`
	Amount     float64 `json:"amount"`
	BonusQuota int64   `json:"bonus_quota"`
	Mode       string  `json:"mode"`
	ReplacesID int64   `json:"replaces_id"`
	Status     int     `json:"status"`
	PayStatus  int     `json:"pay_status"`
	PayMethod  string  `json:"pay_method"`
	PayTradeNo string  `json:"pay_trade_no"`
	CreateTime int64   `json:"create_time"`
	UpdateTime int64   `json:"update_time"`
	PayTime    int64   `json:"pay_time"`
}

func viewOrder(o *store.Order) orderView {
	return orderView{
		ID: o.ID, Type: o.Type, Source: o.Source, OrderNo: o.OrderNo, UserID: o.UserID, PlanID: o.PlanID,
		PlanInfo: o.PlanInfo, Amount: order.CNY(o.AmountCents), BonusQuota: o.BonusQuota, Mode: o.Mode,
		ReplacesID: o.ReplacesID, Status: o.Status, PayStatus: o.PayStatus, PayMethod: o.PayMethod,
		PayTradeNo: o.PayTradeNo, CreateTime: o.CreateTime, UpdateTime: o.UpdateTime, PayTime: o.PayTime,
	}
}

// orderPayView is an order with its pay answer (plan orders, re-initiated
// payment): the order fields and pay next to them.
type orderPayView struct {
	orderView
	Pay *payment.Pay `json:"pay,omitempty"`
}

type planOrderRequest struct {
	PlanID    int64  `json:"plan_id"`
	Mode      string `json:"mode"`
	PayMethod string `json:"pay_method"`
}

// createPlanOrder creates a pending plan order (spec: POST /api/order/plan).
// stack: full price, TB. price_diff: the price less the residual value of
// the caller's earliest-expiring active subscription, UP; with no active
// subscription the full price (docs/decisions/commerce.md).
func (s *Server) createPlanOrder(w http.ResponseWriter, r *http.Request) error {
	var req planOrderRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.Mode != order.ModeStack && req.Mode != order.ModePriceDiff {
		return httpx.Fail(MsgOrderModeInvalid)
	}
	if req.PayMethod != "" {
		if msg := selfPayMethod(req.PayMethod); msg != "" {
			return httpx.Fail(msg)
		}
	}
	p, err := s.Store.PlanByID(r.Context(), req.PlanID)
	if errors.Is(err, store.ErrNotFound) || err == nil && p.Status != plan.StatusListed {
		return httpx.Fail(MsgOrderPlanUnlisted)
	}
	if err != nil {
		return err
	}
	price, err := order.Cents(p.Price)
	if err != nil {
		return httpx.Fail(MsgOrderAmountTooHigh)
	}
	me := caller(r)
	now := time.Now()
	o := store.Order{Type: order.TypePlan, Source: order.SourceSelf, UserID: me.ID, PlanID: p.ID,
		AmountCents: price, Mode: req.Mode, PayMethod: req.PayMethod}
	prefix := order.PrefixStack
	if req.Mode == order.ModePriceDiff {
		prefix = order.PrefixUpgrade
		subs, err := s.Store.ActiveUserPlans(r.Context(), me.ID, now.Unix())
		if err != nil {
			return err
		}
		if len(subs) > 0 {
			old := subs[0]
			o.ReplacesID = old.ID
			o.AmountCents = s.upgradePrice(r, price, old, now.Unix())
		}
	}
	info, _ := json.Marshal(store.PlanInfo{Name: p.Name, Price: p.Price, DurationDays: p.DurationDays})
	o.PlanInfo = string(info)
	if err := s.createOrder(r, &o, prefix); err != nil {
		return err
	}
	v := orderPayView{orderView: viewOrder(&o)}
	if req.PayMethod != "" {
		pay, err := s.startPay(r, &o, req.PayMethod)
		if err != nil {
			return err
		}
		v.orderView = viewOrder(&o)
		v.Pay = &pay
	}
	return httpx.OK(w, v)
}

// upgradePrice is the price of an upgrade replacing old: its plan's
// current price and duration give the residual value (a plan since deleted
// is worth nothing).
func (s *Server) upgradePrice(r *http.Request, newPrice int64, old store.UserPlan, now int64) int64 {
	oldPlan, err := s.Store.PlanByID(r.Context(), old.PlanID)
	if err != nil {
		return newPrice
	}
	oldPrice, err := order.Cents(oldPlan.Price)
	if err != nil {
		return newPrice
	}
	return order.UpgradeCents(newPrice, oldPrice, old.EndTime-now, oldPlan.DurationDays)
}

// createOrder stores o under a fresh number with prefix; repeated
// collisions answer the spec's message.
func (s *Server) createOrder(r *http.Request, o *store.Order, prefix string) error {
	err := s.Store.CreateOrder(r.Context(), o, func() string { return order.NewOrderNo(prefix, time.Now()) })
	if errors.Is(err, store.ErrOrderNoExhausted) {
		return httpx.Fail(order.MsgOrderNoFailed)
	}
	return err
}

// selfPayMethod checks a method a user may pay with: the spec's top-up
// messages for an unknown one and for offline and free.
func selfPayMethod(method string) string {
	switch method {
	case payment.MethodWechat, payment.MethodAlipay, payment.MethodBank:
		return ""
	case payment.MethodOffline, payment.MethodFree:
		return order.MsgPayMethodNotSelf
	case "":
		return order.MsgPayMethodRequired
	}
	return order.MsgPayMethodUnknown
}

// listSelfOrders lists the caller's orders, optionally of one type.
func (s *Server) listSelfOrders(w http.ResponseWriter, r *http.Request) error {
	f, err := orderFilter(r)
	if err != nil {
		return err
	}
	f = store.OrderFilter{UserID: caller(r).ID, Type: f.Type}
	return s.writeOrders(w, r, f)
}

// selfOrder reads the caller's order id: another user's order answers as
// if it did not exist.
func (s *Server) selfOrder(r *http.Request) (store.Order, error) {
	id, err := httpx.PathID(r)
	if err != nil {
		return store.Order{}, err
	}
	o, err := s.Store.OrderByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && o.UserID != caller(r).ID {
		return o, httpx.Fail(MsgOrderNotFound)
	}
	return o, err
}

func (s *Server) getSelfOrder(w http.ResponseWriter, r *http.Request) error {
	o, err := s.selfOrder(r)
	if err != nil {
		return err
	}
	return httpx.OK(w, viewOrder(&o))
}

// cancelSelfOrder cancels the caller's pending order (0 → 2 only).
func (s *Server) cancelSelfOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	o, err := s.Store.CancelOrder(r.Context(), id, caller(r).ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgOrderNotFound)
	case errors.Is(err, store.ErrConflict):
		return httpx.Fail(MsgOrderNotPending)
	case err != nil:
		return err
	}
	return httpx.OK(w, viewOrder(&o))
}

type payOrderRequest struct {
	PayMethod string `json:"pay_method"`
}

// paySelfOrder re-initiates payment of the caller's pending order, with
// its method or the one sent.
func (s *Server) paySelfOrder(w http.ResponseWriter, r *http.Request) error {
	var req payOrderRequest
	if r.ContentLength != 0 {
		if err := httpx.Decode(w, r, &req); err != nil {
			return err
		}
	}
	o, err := s.selfOrder(r)
	if err != nil {
		return err
	}
	if o.Status != order.StatusPending {
		return httpx.Fail(MsgOrderNotPending)
	}
	method := req.PayMethod
	if method == "" {
		method = o.PayMethod
	}
	if msg := selfPayMethod(method); msg != "" {
		return httpx.Fail(msg)
	}
	pay, err := s.startPay(r, &o, method)
	if err != nil {
		return err
	}
	return httpx.OK(w, orderPayView{orderView: viewOrder(&o), Pay: &pay})
}

// orderFilter reads the admin list's query (spec: p, type, status —
// including 0 —, source, user_id, plan_id, keyword).
func orderFilter(r *http.Request) (store.OrderFilter, error) {
	var f store.OrderFilter
	var err error
	ints := []struct {
		name string
		dst  *int64
	}{{"user_id", &f.UserID}, {"plan_id", &f.PlanID}}
	for _, q := range ints {
		if *q.dst, err = httpx.QueryInt(r, q.name, 0); err != nil {
			return f, err
		}
	}
	typ, err := httpx.QueryInt(r, "type", 0)
	if err != nil {
		return f, err
	}
	source, err := httpx.QueryInt(r, "source", 0)
	if err != nil {
		return f, err
	}
	f.Type, f.Source = int(max(min(typ, 1000), -1000)), int(max(min(source, 1000), -1000))
	if r.URL.Query().Get("status") != "" {
		st, err := httpx.QueryInt(r, "status", 0)
		if err != nil {
			return f, err
		}
		if st < order.StatusPending || st > order.StatusRefunded {
			return f, httpx.Fail(MsgOrderStatusQuery)
		}
		v := int(st)
		f.Status = &v
	}
	f.Keyword, err = searchKeyword(r)
	return f, err
}

func (s *Server) writeOrders(w http.ResponseWriter, r *http.Request, f store.OrderFilter) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Store.ListOrders(r.Context(), f, pg)
	if err != nil {
		return err
	}
	views := make([]orderView, len(rows))
	for i := range rows {
		views[i] = viewOrder(&rows[i])
	}
	return httpx.OKList(w, views, total)
}

func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) error {
	f, err := orderFilter(r)
	if err != nil {
		return err
	}
	return s.writeOrders(w, r, f)
}

func (s *Server) searchOrders(w http.ResponseWriter, r *http.Request) error {
	keyword, err := searchKeyword(r)
	if err != nil {
		return err
	}
	return s.writeOrders(w, r, store.OrderFilter{Keyword: keyword})
}

func (s *Server) getOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	o, err := s.Store.OrderByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgOrderNotFound)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewOrder(&o))
}

func (s *Server) deleteOrder(w http.ResponseWriter, r *http.Request) error {
	return deleteByID(w, r, s.Store.DeleteOrder, MsgOrderNotFound)
}
