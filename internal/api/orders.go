package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/commerce"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Messages of the order endpoints (the spec does not fix them); the
// use-cases' own are commerce's.
const (
	MsgOrderNotFound      = commerce.MsgOrderNotFound
	MsgOrderNotPending    = commerce.MsgOrderNotPending
	MsgOrderStatusInvalid = commerce.MsgOrderStatusInvalid
	MsgOrderStatusQuery   = "参数 status 只能是 0 到 3"
)

var payTradeNoText = textfield.Field{Label: "pay_trade_no", MaxChars: 128}

// orderView is an order as answers show it (amount in CNY).
type orderView = commerce.OrderView

func viewOrder(o *store.Order) orderView { return commerce.View(o) }

// orderPayView is an order with its pay answer (plan orders, re-initiated
// payment): the order fields and pay next to them.
type orderPayView struct {
	orderView
	Pay *payment.Pay `json:"pay,omitempty"`
}

func placedView(p commerce.Placed) orderPayView {
	return orderPayView{orderView: viewOrder(&p.Order), Pay: p.Pay}
}

type planOrderRequest struct {
	PlanID    int64  `json:"plan_id"`
	Mode      string `json:"mode"`
	PayMethod string `json:"pay_method"`
}

// createPlanOrder creates a pending plan order (spec: POST /api/order/plan):
// commerce.Service.CreatePlanOrder.
func (s *Server) createPlanOrder(w http.ResponseWriter, r *http.Request) error {
	var req planOrderRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	placed, err := s.Commerce.CreatePlanOrder(r.Context(), payer(r), req.PlanID, req.Mode, req.PayMethod)
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, placedView(placed))
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

func (s *Server) getSelfOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	o, err := s.Commerce.SelfOrder(r.Context(), caller(r).ID, id)
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, viewOrder(&o))
}

// cancelSelfOrder cancels the caller's pending order (0 → 2 only).
func (s *Server) cancelSelfOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	o, err := s.Commerce.Cancel(r.Context(), caller(r).ID, id)
	if err != nil {
		return commerceError(err)
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
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	placed, err := s.Commerce.PayAgain(r.Context(), payer(r), id, req.PayMethod)
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, placedView(placed))
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
	o, err := s.Commerce.Order(r.Context(), id)
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, viewOrder(&o))
}

func (s *Server) deleteOrder(w http.ResponseWriter, r *http.Request) error {
	return deleteByID(w, r, s.Store.DeleteOrder, MsgOrderNotFound)
}
