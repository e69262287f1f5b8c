package store

import (
	"context"
	"fmt"

	"github.com/modelgate/modelgate/internal/logtext"
)

// RewardInviter credits the inviter of user inviteeID with amount, once per
// invitee: a conditional update marks the invitee rewarded, and only the
// call that changed it credits, with a type-1 log, in tx. It is called by
// order activation (ActivateOrder) in the activation's transaction, so the
// first paid order of an invitee rewards its inviter exactly once however
// many activations race. Issue 31 §4. When activation moves into its own
// service, that service calls this from its transaction.
func (tx *Tx) RewardInviter(inviteeID, amount int64) error {
	if amount <= 0 {
		return nil
	}
	var invitee User
	if err := tx.db.Select("id", "username", "inviter_id").Where("id = ?", inviteeID).Take(&invitee).Error; err != nil {
		return fmt.Errorf("reward inviter of %d: %w", inviteeID, err)
	}
	if invitee.InviterID == 0 {
		return nil
	}
	res := tx.db.Model(&User{}).Where("id = ? AND invite_rewarded = ?", inviteeID, false).
		Updates(map[string]any{"invite_rewarded": true, "invite_reward": amount})
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	if err := tx.changed("users", "UPDATE", inviteeID); err != nil {
		return err
	}
	var inviter User
	if err := tx.db.Select("id", "username", "user_group", "status").Where("id = ?", invitee.InviterID).Take(&inviter).Error; err != nil {
		return fmt.Errorf("reward inviter %d: %w", invitee.InviterID, err)
	}
	if err := tx.AddUserQuota(inviter.ID, amount); err != nil {
		return fmt.Errorf("reward inviter %d: %w", inviter.ID, err)
	}
	content := fmt.Sprintf(logtext.InviteReward, invitee.Username, amount)
	return tx.InsertLogs([]Log{{UserID: inviter.ID, Username: inviter.Username, Group: inviter.Group, Type: LogTopup, Quota: amount, Content: content}})
}

// InviteStats is what an inviter sees: how many users registered with its
// code, and the quota their first paid orders earned it.
type InviteStats struct {
	Count  int64
	Reward int64
}

// InviteStatsOf counts the invitees of user id and sums its rewards.
func (s *Store) InviteStatsOf(ctx context.Context, id int64) (InviteStats, error) {
	var st InviteStats
	err := s.read(ctx).Model(&User{}).Select("COUNT(*) AS count, COALESCE(SUM(invite_reward), 0) AS reward").
		Where("inviter_id = ?", id).Scan(&st).Error
	return st, wrap("invite stats", err)
}

// UserByAffCode returns the user whose affiliate code is code.
func (s *Store) UserByAffCode(ctx context.Context, code string) (User, error) {
	var u User
	err := s.read(ctx).Where("aff_code = ?", code).Take(&u).Error
	return u, wrap("get user by aff code", err)
}

// NewAccount is a user to create with what comes with it: the verification
// code it proves (CodeHash set) and the invitee's bonus (InviteeBonus > 0,
// credited with a type-1 log).
type NewAccount struct {
	User                *User
	CodeEmail, CodeHash string
	CodeNow             int64
	InviteeBonus        int64
}

// CreateAccount uses the code, creates the user and credits the invitee's
// bonus in one transaction: all or nothing.
func (s *Store) CreateAccount(ctx context.Context, a NewAccount) error {
	return s.write(ctx, "create account", func(tx *Tx) error {
		if a.CodeHash != "" {
			if err := tx.UseAccountCode("verify", a.CodeEmail, a.CodeHash, a.CodeNow); err != nil {
				return err
			}
		}
		if err := tx.CreateUser(a.User); err != nil {
			return err
		}
		if a.InviteeBonus <= 0 {
			return nil
		}
		if err := tx.AddUserQuota(a.User.ID, a.InviteeBonus); err != nil {
			return err
		}
		a.User.Quota += a.InviteeBonus
		content := fmt.Sprintf(logtext.InviteeBonus, a.InviteeBonus)
		return tx.InsertLogs([]Log{{UserID: a.User.ID, Username: a.User.Username, Group: a.User.Group, Type: LogTopup, Quota: a.InviteeBonus, Content: content}})
	})
}
