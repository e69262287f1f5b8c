package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// Messages of the admin user endpoints.
const (
	MsgCannotManageRole  = "无权管理同级或更高权限的用户"
	MsgCannotGrantRole   = "无法授予同级或更高的权限"
	MsgUnknownAction     = "不支持的操作,可选 disable, enable, delete, promote, demote"
	MsgQuotaZero         = "额度必须是非零整数"
	MsgQuotaBelowBalance = "扣减额度超过用户当前余额"
	MsgIDRequired        = "ID不能为空"
	MsgQuotaTooLarge     = "单次充值或扣减的额度不能超过 1000000000000000"
	MsgBalanceLimit      = "充值后余额将超过上限 1000000000000000"
	MsgQuotaRange        = "额度必须在 0 到 1000000000000000 之间"
	MsgBalanceMoved      = "用户余额在读取后已变化,请刷新后重试,或使用 POST /api/topup 调整余额"
)

// Page size of list endpoints: 10 by default, page_size up to 100.
const (
	defaultPageSize = 10
	maxPageSize     = 100
)

// page reads p (0-based) and page_size from the query.
func page(r *http.Request) (store.Page, error) {
	p, err := httpx.QueryInt(r, "p", 0)
	if err != nil {
		return store.Page{}, err
	}
	size, err := httpx.QueryInt(r, "page_size", defaultPageSize)
	if err != nil {
		return store.Page{}, err
	}
	p = max(0, min(p, 1_000_000)) // a huge page number must not overflow the offset
	if size < 1 {
		size = defaultPageSize
	}
	size = min(size, maxPageSize)
	return store.Page{Offset: int(p * size), Limit: int(size)}, nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	return s.writeUsers(w, r, "")
}

func (s *Server) searchUsers(w http.ResponseWriter, r *http.Request) error {
	keyword, err := searchKeyword(r)
	if err != nil {
		return err
	}
	return s.writeUsers(w, r, keyword)
}

func (s *Server) writeUsers(w http.ResponseWriter, r *http.Request, keyword string) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	users, total, err := s.Store.ListUsers(r.Context(), keyword, pg)
	if err != nil {
		return err
	}
	views := make([]userView, len(users))
	for i := range users {
		views[i] = viewUser(&users[i])
	}
	return httpx.OKList(w, views, total)
}

// managedUser loads the target of an admin action and checks that the
// caller outranks it: an admin manages only users of a lower role.
func (s *Server) managedUser(r *http.Request, id int64) (store.User, error) {
	u, err := s.Store.UserByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return u, httpx.Fail(MsgUserNotFound)
	}
	if err != nil {
		return u, err
	}
	if u.Role >= caller(r).Role {
		return u, httpx.Fail(MsgCannotManageRole)
	}
	return u, nil
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	u, err := s.Store.UserByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgUserNotFound)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewUser(&u))
}

type createUserRequest struct {
	Username    string `json:"username"`
	Password    string `json:"password"`
	DisplayName string `json:"display_name"`
	Email       string `json:"email"`
	Role        *int   `json:"role"`
	Group       string `json:"group"`
	Quota       int64  `json:"quota"`
}

// createUser adds an account; the role defaults to user and must stay below
// the caller's.
func (s *Server) createUser(w http.ResponseWriter, r *http.Request) error {
	var req createUserRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.Username, req.Email = strings.TrimSpace(req.Username), strings.TrimSpace(req.Email)
	req.DisplayName = strings.TrimSpace(req.DisplayName)
	if req.DisplayName == "" {
		req.DisplayName = req.Username
	}
	if req.Group == "" {
		req.Group = user.DefaultGroup
	}
	role := user.RoleUser
	if req.Role != nil {
		role = *req.Role
	}
	msg := firstProblem(user.ValidateUsername(req.Username), passwordProblem(req.Password),
		user.ValidateDisplayName(req.DisplayName), user.ValidateEmail(req.Email), user.ValidateGroup(req.Group))
	if msg != "" {
		return httpx.Fail(msg)
	}
	if err := checkGrantableRole(caller(r), role); err != nil {
		return err
	}
	if req.Quota < 0 || req.Quota > pricing.MaxBalance {
		return httpx.Fail(MsgQuotaRange)
	}
	u := store.User{
		Username: req.Username, DisplayName: req.DisplayName, Email: req.Email,
		Role: role, Status: user.StatusEnabled, Group: req.Group, Quota: req.Quota,
	}
	if err := s.createAccount(r, &u, req.Password); err != nil {
		return err
	}
	return httpx.OK(w, viewUser(&u))
}

// checkGrantableRole allows roles below the caller's own; nothing grants root.
func checkGrantableRole(me *store.User, role int) error {
	if !user.ValidRole(role) || role == user.RoleGuest {
		return httpx.Fail(user.MsgRoleInvalid)
	}
	if role >= me.Role {
		return httpx.Fail(MsgCannotGrantRole)
	}
	return nil
}

type updateUserRequest struct {
	ID          int64   `json:"id"`
	Username    *string `json:"username"`
	DisplayName *string `json:"display_name"`
	Password    *string `json:"password"`
	Email       *string `json:"email"`
	Role        *int    `json:"role"`
	Status      *int    `json:"status"`
	Quota       *int64  `json:"quota"`
	QuotaBefore *int64  `json:"quota_before"`
	Group       *string `json:"group"`
}

// updateUser changes any field of a user the caller outranks. An empty or
// absent password leaves it unchanged. The balance changes only as a delta:
// quota is applied when quota_before (the balance the admin read) is sent too,
// as quota − quota_before, and refused when the balance has moved since; a
// quota without quota_before is ignored, so a form sent back unchanged cannot
// wipe charges or holds made since it was read. A quota change writes an
// admin log. In cluster mode the quota change is made on the user's owner
// node (owner.Balances): an owner that cannot be reached changes nothing.
func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) error {
	var req updateUserRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	target, err := s.managedUser(r, req.ID)
	if err != nil {
		return err
	}
	patch, err := s.userPatch(caller(r), &req)
	if err != nil {
		return err
	}
	u, err := s.Balances.UpdateUser(r.Context(), owner.UserEdit{ID: target.ID, Patch: patch, Admin: caller(r).Username})
	switch {
	case errors.Is(err, owner.ErrUnavailable):
		s.Log.Warn("user quota not forwarded: owner unavailable", "user_id", target.ID, "err", err)
		return httpx.Failf(MsgUserQuotaOwnerDown, cluster.Owner(target.ID))
	case errors.Is(err, store.ErrDuplicate):
		return httpx.Fail(MsgUsernameTaken)
	case errors.Is(err, store.ErrBalanceMoved):
		return httpx.Fail(MsgBalanceMoved)
	case errors.Is(err, store.ErrBalanceLimit):
		return httpx.Fail(MsgQuotaRange)
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgUserNotFound)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewUser(&u))
}

// userPatch validates an admin update into a store patch.
func (s *Server) userPatch(me *store.User, req *updateUserRequest) (store.UserPatch, error) {
	p := store.UserPatch{Email: req.Email, Role: req.Role, Status: req.Status, Group: req.Group}
	if req.Quota != nil && req.QuotaBefore != nil {
		p.Quota = &store.QuotaChange{Before: *req.QuotaBefore, After: *req.Quota}
	}
	var problems []string
	if req.Username != nil {
		name := strings.TrimSpace(*req.Username)
		p.Username = &name
		problems = append(problems, user.ValidateUsername(name))
	}
	if req.DisplayName != nil {
		name := strings.TrimSpace(*req.DisplayName)
		p.DisplayName = &name
		problems = append(problems, user.ValidateDisplayName(name))
	}
	if req.Email != nil {
		problems = append(problems, user.ValidateEmail(*req.Email))
	}
	if req.Group != nil {
		problems = append(problems, user.ValidateGroup(*req.Group))
	}
	if req.Status != nil && !user.ValidStatus(*req.Status) {
		problems = append(problems, user.MsgStatusInvalid)
	}
	if p.Quota != nil && (p.Quota.After < 0 || p.Quota.After > pricing.MaxBalance) {
		problems = append(problems, MsgQuotaRange)
	}
	if msg := firstProblem(problems...); msg != "" {
		return p, httpx.Fail(msg)
	}
	if req.Role != nil {
		if err := checkGrantableRole(me, *req.Role); err != nil {
			return p, err
		}
	}
	if req.Password != nil && *req.Password != "" {
		if msg := passwordProblem(*req.Password); msg != "" {
			return p, httpx.Fail(msg)
		}
		hash, err := s.hashPassword(*req.Password)
		if err != nil {
			return p, err
		}
		p.PasswordHash = &hash
	}
	return p, nil
}

// deleteUser soft-deletes a user the caller outranks and ends its sessions.
func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	if _, err := s.managedUser(r, id); err != nil {
		return err
	}
	if err := s.setUserStatus(r, id, user.StatusDeleted); err != nil {
		return err
	}
	return httpx.OKMessage(w, "")
}

// setUserStatus changes a status; the store ends the user's sessions in the
// same transaction.
func (s *Server) setUserStatus(r *http.Request, id int64, status int) error {
	return s.Store.UpdateUser(r.Context(), id, store.UserPatch{Status: &status}, nil)
}

type manageRequest struct {
	Username string `json:"username"`
	Action   string `json:"action"`
}

type manageResponse struct {
	Role   int `json:"role"`
	Status int `json:"status"`
}

// manageUser applies one action to a user the caller outranks. promote makes
// an admin (role 10), so only root can promote; demote makes a user (role 1).
func (s *Server) manageUser(w http.ResponseWriter, r *http.Request) error {
	var req manageRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.Username = strings.TrimSpace(req.Username)
	if msg := user.ValidateUsernameText(req.Username); msg != "" {
		return httpx.Fail(msg)
	}
	target, err := s.Store.UserByUsername(r.Context(), req.Username)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgUserNotFound)
	}
	if err != nil {
		return err
	}
	if _, err := s.managedUser(r, target.ID); err != nil {
		return err
	}
	switch req.Action {
	case "disable":
		target.Status = user.StatusDisabled
	case "enable":
		target.Status = user.StatusEnabled
	case "delete":
		target.Status = user.StatusDeleted
	case "promote":
		if err := checkGrantableRole(caller(r), user.RoleAdmin); err != nil {
			return err
		}
		target.Role = user.RoleAdmin
	case "demote":
		target.Role = user.RoleUser
	default:
		return httpx.Fail(MsgUnknownAction)
	}
	// A role or status change ends the user's sessions in the same
	// transaction (store.UpdateUser).
	err = s.Store.UpdateUser(r.Context(), target.ID, store.UserPatch{Role: &target.Role, Status: &target.Status}, nil)
	if err != nil {
		return err
	}
	return httpx.OK(w, manageResponse{Role: target.Role, Status: target.Status})
}

type adminTopupRequest struct {
	UserID int64  `json:"user_id"`
	Quota  int64  `json:"quota"`
	Remark string `json:"remark"`
}

// adminTopup credits (or, with a negative quota, deducts) a balance in one
// atomic statement and writes a top-up log in the same transaction. Root may
// top up anyone, itself included; an admin only users it manages (a lower
// role, so never itself, another admin or root). With an Idempotency-Key
// header a retry within 24 hours gets the first answer and credits nothing.
func (s *Server) adminTopup(w http.ResponseWriter, r *http.Request) error {
	var req adminTopupRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.UserID <= 0 {
		return httpx.Fail(MsgIDRequired)
	}
	if req.Quota == 0 {
		return httpx.Fail(MsgQuotaZero)
	}
	if req.Quota > pricing.MaxBalance || req.Quota < -pricing.MaxBalance {
		return httpx.Fail(MsgQuotaTooLarge)
	}
	req.Remark = strings.TrimSpace(req.Remark)
	if msg := remarkText.Validate(req.Remark); msg != "" {
		return httpx.Fail(msg)
	}
	key, err := idempotencyKey(r, "POST /api/topup", req)
	if err != nil {
		return err
	}
	target, err := s.topupTarget(r, req.UserID)
	if err != nil {
		return err
	}
	content := fmt.Sprintf(logtext.AdminTopup, caller(r).Username, req.Quota)
	if req.Remark != "" {
		content = fmt.Sprintf(logtext.AdminTopupRemark, caller(r).Username, req.Quota, req.Remark)
	}
	log := &store.Log{UserID: target.ID, Username: target.Username, Group: target.Group, Type: store.LogTopup, Quota: req.Quota, Content: content}
	if key.Key == "" {
		if err := topupError(s.Store.AddUserQuota(r.Context(), target.ID, req.Quota, log)); err != nil {
			return err
		}
		return httpx.OKMessage(w, "")
	}
	return s.runIdempotent(w, r, key, func(tx *store.Tx) (store.Answer, error) {
		err := tx.AddUserQuota(target.ID, req.Quota)
		if err == nil {
			err = tx.InsertLogs([]store.Log{*log})
		}
		return okAnswer("", nil), topupError(err)
	})
}

// topupTarget loads the user of an admin top-up and checks the caller may
// credit it: root anyone, an admin users of a lower role only.
func (s *Server) topupTarget(r *http.Request, id int64) (store.User, error) {
	if caller(r).Role < user.RoleRoot {
		return s.managedUser(r, id)
	}
	u, err := s.Store.UserByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return u, httpx.Fail(MsgUserNotFound)
	}
	return u, err
}

// topupError turns the store's refusal of a top-up into the client's
// message; nil stays nil.
func topupError(err error) error {
	switch {
	case errors.Is(err, store.ErrConflict):
		return httpx.Fail(MsgQuotaBelowBalance)
	case errors.Is(err, store.ErrBalanceLimit):
		return httpx.Fail(MsgBalanceLimit)
	}
	return err
}
