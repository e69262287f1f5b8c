package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the price endpoints. The spec's own (empty model or group
// name, ID不能为空, 无效的ID) come from pricing, MsgIDRequired and httpx.
const (
	MsgModelPriceNotFound = "模型价格不存在"
	MsgGroupPriceNotFound = "分组价格不存在"
)

// modelPriceView is a model price as the API shows it: the spec's fields,
// then the cache-write prices and the context-length tiers (issue 13 §3;
// tiers is always an array, empty when the model has none).
type modelPriceView struct {
	ID                int64       `json:"id"`
	ModelName         string      `json:"model_name"`
	InputPrice        float64     `json:"input_price"`
	OutputPrice       float64     `json:"output_price"`
	CachedPrice       float64     `json:"cached_price"`
	PerRequestPrice   float64     `json:"per_request_price"`
	BillingType       string      `json:"billing_type"`
	Enabled           bool        `json:"enabled"`
	CreatedAt         int64       `json:"created_at"`
	UpdatedAt         int64       `json:"updated_at"`
	CacheWritePrice   float64     `json:"cache_write_price"`
	CacheWrite1hPrice float64     `json:"cache_write_1h_price"`
	Tiers             []priceTier `json:"tiers"`
	// MaxOutputTokens is the most the model writes in one completion (0:
	// unknown; issue 28 §4): an open call is held for it.
	MaxOutputTokens int64 `json:"max_output_tokens"`
}

// priceTier is one context-length tier: its prices apply to a call whose
// whole prompt has more than above_prompt_tokens tokens.
type priceTier struct {
	AbovePromptTokens int64   `json:"above_prompt_tokens"`
	InputPrice        float64 `json:"input_price"`
	OutputPrice       float64 `json:"output_price"`
	CachedPrice       float64 `json:"cached_price"`
	CacheWritePrice   float64 `json:"cache_write_price"`
	CacheWrite1hPrice float64 `json:"cache_write_1h_price"`
}

func viewModelPrice(p *store.ModelPrice) modelPriceView {
	// Stored tiers were validated when written; a row that fails to decode
	// (written around the API) shows none, and the relay refuses its model.
	stored, _ := store.DecodeTiers(p.Tiers)
	tiers := make([]priceTier, len(stored))
	for i, t := range stored {
		tiers[i] = priceTier{AbovePromptTokens: t.Above, InputPrice: t.InputPrice, OutputPrice: t.OutputPrice,
			CachedPrice: t.CachedPrice, CacheWritePrice: t.CacheWritePrice, CacheWrite1hPrice: t.CacheWrite1hPrice}
	}
	return modelPriceView{
		ID: p.ID, ModelName: p.ModelName, InputPrice: p.InputPrice, OutputPrice: p.OutputPrice,
		CachedPrice: p.CachedPrice, PerRequestPrice: p.PerRequestPrice, BillingType: p.BillingType,
		Enabled: p.Enabled, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		CacheWritePrice: p.CacheWritePrice, CacheWrite1hPrice: p.CacheWrite1hPrice, Tiers: tiers,
		MaxOutputTokens: p.MaxOutputTokens,
	}
}

// validTiers converts and checks the tiers of a request: the encoded
// column value, or the first problem.
func validTiers(in []priceTier) (string, string) {
	tiers := make([]pricing.Tier, len(in))
	for i, t := range in {
		tiers[i] = pricing.Tier{Above: t.AbovePromptTokens, InputPrice: t.InputPrice, OutputPrice: t.OutputPrice,
			CachedPrice: t.CachedPrice, CacheWritePrice: t.CacheWritePrice, CacheWrite1hPrice: t.CacheWrite1hPrice}
	}
	if msg := pricing.ValidateTiers(tiers); msg != "" {
		return "", msg
	}
	return store.EncodeTiers(tiers), ""
}

func (s *Server) listModelPrices(w http.ResponseWriter, r *http.Request) error {
	prices, err := s.Store.ModelPrices(r.Context())
	if err != nil {
		return err
	}
	return writeViews(w, prices, viewModelPrice)
}

type createModelPriceRequest struct {
	ModelName         string      `json:"model_name"`
	InputPrice        float64     `json:"input_price"`
	OutputPrice       float64     `json:"output_price"`
	CachedPrice       float64     `json:"cached_price"`
	CacheWritePrice   float64     `json:"cache_write_price"`
	CacheWrite1hPrice float64     `json:"cache_write_1h_price"`
	Tiers             []priceTier `json:"tiers"`
	PerRequestPrice   float64     `json:"per_request_price"`
	BillingType       string      `json:"billing_type"`
	Enabled           *bool       `json:"enabled"`
	MaxOutputTokens   int64       `json:"max_output_tokens"`
}

// createModelPrice adds the price of a model; billing_type defaults to token
// and enabled to true.
func (s *Server) createModelPrice(w http.ResponseWriter, r *http.Request) error {
	var req createModelPriceRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.ModelName = strings.TrimSpace(req.ModelName)
	if req.BillingType == "" {
		req.BillingType = pricing.BillingToken
	}
	tiers, tiersProblem := validTiers(req.Tiers)
	msg := firstProblem(pricing.ValidateModelName(req.ModelName),
		pricing.ValidatePrice(req.InputPrice), pricing.ValidatePrice(req.OutputPrice),
		pricing.ValidatePrice(req.CachedPrice), pricing.ValidatePrice(req.PerRequestPrice),
		pricing.ValidateBillingType(req.BillingType),
		pricing.ValidatePrice(req.CacheWritePrice), pricing.ValidatePrice(req.CacheWrite1hPrice), tiersProblem,
		pricing.ValidateOutputLimit(req.MaxOutputTokens))
	if msg != "" {
		return httpx.Fail(msg)
	}
	p := store.ModelPrice{
		ModelName: req.ModelName, InputPrice: req.InputPrice, OutputPrice: req.OutputPrice,
		CachedPrice: req.CachedPrice, CacheWritePrice: req.CacheWritePrice, CacheWrite1hPrice: req.CacheWrite1hPrice,
		Tiers: tiers, PerRequestPrice: req.PerRequestPrice,
		BillingType: req.BillingType, Enabled: req.Enabled == nil || *req.Enabled, MaxOutputTokens: req.MaxOutputTokens,
	}
	if err := s.Store.CreateModelPrice(r.Context(), &p); err != nil {
		return duplicateAsFailure(err)
	}
	return httpx.OK(w, viewModelPrice(&p))
}

type updateModelPriceRequest struct {
	ID int64 `json:"id"`
	// ModelName is accepted and ignored: the spec says it identifies the
	// price and is not changed; the id alone selects the row.
	ModelName         *string  `json:"model_name"`
	InputPrice        *float64 `json:"input_price"`
	OutputPrice       *float64 `json:"output_price"`
	CachedPrice       *float64 `json:"cached_price"`
	CacheWritePrice   *float64 `json:"cache_write_price"`
	CacheWrite1hPrice *float64 `json:"cache_write_1h_price"`
	// Tiers replaces every tier when sent; [] removes them.
	Tiers           *[]priceTier `json:"tiers"`
	PerRequestPrice *float64     `json:"per_request_price"`
	BillingType     *string      `json:"billing_type"`
	Enabled         *bool        `json:"enabled"`
	MaxOutputTokens *int64       `json:"max_output_tokens"`
}

// updateModelPrice changes the fields sent; the others keep their values.
func (s *Server) updateModelPrice(w http.ResponseWriter, r *http.Request) error {
	var req updateModelPriceRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	var problems []string
	for _, v := range []*float64{req.InputPrice, req.OutputPrice, req.CachedPrice, req.PerRequestPrice,
		req.CacheWritePrice, req.CacheWrite1hPrice} {
		if v != nil {
			problems = append(problems, pricing.ValidatePrice(*v))
		}
	}
	if req.BillingType != nil {
		problems = append(problems, pricing.ValidateBillingType(*req.BillingType))
	}
	if req.MaxOutputTokens != nil {
		problems = append(problems, pricing.ValidateOutputLimit(*req.MaxOutputTokens))
	}
	var tiers *string
	if req.Tiers != nil {
		encoded, msg := validTiers(*req.Tiers)
		tiers, problems = &encoded, append(problems, msg)
	}
	if msg := firstProblem(problems...); msg != "" {
		return httpx.Fail(msg)
	}
	p, err := s.Store.UpdateModelPrice(r.Context(), req.ID, store.ModelPricePatch{
		InputPrice: req.InputPrice, OutputPrice: req.OutputPrice, CachedPrice: req.CachedPrice,
		CacheWritePrice: req.CacheWritePrice, CacheWrite1hPrice: req.CacheWrite1hPrice, Tiers: tiers,
		PerRequestPrice: req.PerRequestPrice, BillingType: req.BillingType, Enabled: req.Enabled,
		MaxOutputTokens: req.MaxOutputTokens,
	})
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgModelPriceNotFound)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewModelPrice(&p))
}

func (s *Server) deleteModelPrice(w http.ResponseWriter, r *http.Request) error {
	return deleteByID(w, r, s.Store.DeleteModelPrice, MsgModelPriceNotFound)
}

// groupPriceView is a group price as the API shows it.
type groupPriceView struct {
	ID        int64   `json:"id"`
	GroupName string  `json:"group_name"`
	ModelName string  `json:"model_name"`
	Discount  float64 `json:"discount"`
	CreatedAt int64   `json:"created_at"`
	UpdatedAt int64   `json:"updated_at"`
}

func viewGroupPrice(p *store.GroupPrice) groupPriceView {
	return groupPriceView{
		ID: p.ID, GroupName: p.GroupName, ModelName: p.ModelName, Discount: p.Discount,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
}

func (s *Server) listGroupPrices(w http.ResponseWriter, r *http.Request) error {
	prices, err := s.Store.GroupPrices(r.Context())
	if err != nil {
		return err
	}
	return writeViews(w, prices, viewGroupPrice)
}

type createGroupPriceRequest struct {
	GroupName string   `json:"group_name"`
	ModelName string   `json:"model_name"`
	Discount  *float64 `json:"discount"`
}

// createGroupPrice adds a discount for a group, for one model or (empty
// model_name) for all; the discount defaults to 1.0.
func (s *Server) createGroupPrice(w http.ResponseWriter, r *http.Request) error {
	var req createGroupPriceRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	p := store.GroupPrice{
		GroupName: strings.TrimSpace(req.GroupName), ModelName: strings.TrimSpace(req.ModelName), Discount: 1,
	}
	if req.Discount != nil {
		p.Discount = *req.Discount
	}
	msg := firstProblem(pricing.ValidateGroupName(p.GroupName), pricing.ValidateGroupModel(p.ModelName),
		pricing.ValidateDiscount(p.Discount))
	if msg != "" {
		return httpx.Fail(msg)
	}
	if err := s.Store.CreateGroupPrice(r.Context(), &p); err != nil {
		return duplicateAsFailure(err)
	}
	return httpx.OK(w, viewGroupPrice(&p))
}

type updateGroupPriceRequest struct {
	ID        int64    `json:"id"`
	GroupName *string  `json:"group_name"`
	ModelName *string  `json:"model_name"`
	Discount  *float64 `json:"discount"`
}

// updateGroupPrice changes the fields sent; the others keep their values.
func (s *Server) updateGroupPrice(w http.ResponseWriter, r *http.Request) error {
	var req updateGroupPriceRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	var problems []string
	if req.GroupName != nil {
		*req.GroupName = strings.TrimSpace(*req.GroupName)
		problems = append(problems, pricing.ValidateGroupName(*req.GroupName))
	}
	if req.ModelName != nil {
		*req.ModelName = strings.TrimSpace(*req.ModelName)
		problems = append(problems, pricing.ValidateGroupModel(*req.ModelName))
	}
	if req.Discount != nil {
		problems = append(problems, pricing.ValidateDiscount(*req.Discount))
	}
	if msg := firstProblem(problems...); msg != "" {
		return httpx.Fail(msg)
	}
	p, err := s.Store.UpdateGroupPrice(r.Context(), req.ID, store.GroupPricePatch{
		GroupName: req.GroupName, ModelName: req.ModelName, Discount: req.Discount,
	})
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgGroupPriceNotFound)
	}
	if err != nil {
		return duplicateAsFailure(err)
	}
	return httpx.OK(w, viewGroupPrice(&p))
}

func (s *Server) deleteGroupPrice(w http.ResponseWriter, r *http.Request) error {
	return deleteByID(w, r, s.Store.DeleteGroupPrice, MsgGroupPriceNotFound)
}

// duplicateAsFailure shows a unique-constraint violation with the
// database's own text, as the spec asks for duplicate model prices; other
// errors pass through as internal.
func duplicateAsFailure(err error) error {
	var dup *store.DuplicateError
	if errors.As(err, &dup) {
		return httpx.Fail(dup.Error())
	}
	return err
}
