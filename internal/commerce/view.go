package commerce

import (
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// OrderView is an order as answers show it: amount in CNY (stored in
// fen). It is also the order in the owner node's activation answer.
type OrderView struct {
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

// View is o as answers show it.
func View(o *store.Order) OrderView {
	return OrderView{
		ID: o.ID, Type: o.Type, Source: o.Source, OrderNo: o.OrderNo, UserID: o.UserID, PlanID: o.PlanID,
		PlanInfo: o.PlanInfo, Amount: order.CNY(o.AmountCents), BonusQuota: o.BonusQuota, Mode: o.Mode,
		ReplacesID: o.ReplacesID, Status: o.Status, PayStatus: o.PayStatus, PayMethod: o.PayMethod,
		PayTradeNo: o.PayTradeNo, CreateTime: o.CreateTime, UpdateTime: o.UpdateTime, PayTime: o.PayTime,
	}
}

// Placed is a created (or re-paid) order with its pay answer; Pay is nil
// when no payment was started.
type Placed struct {
	Order store.Order
	Pay   *payment.Pay
	// Superseded are the pending upgrade orders of the same subscription
	// this one cancelled (status 2): their trades are to be closed at the
	// provider.
	Superseded []store.Order
}
