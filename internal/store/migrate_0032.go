package store

import "gorm.io/gorm"

// migration0032 adds to users the subjects of their sign-in providers
// (github_id, oidc_id: NULL until bound, unique when set) and the inviter
// (inviter_id, 0 = none) with whether, and how much, the inviter was
// rewarded for this user (invite_rewarded, invite_reward) of issue 31. The users table replicates
// generically, so the columns travel with it.
func migration0032(db *gorm.DB) error {
	m := db.Migrator()
	// Column by column and only when missing: MySQL commits DDL at once,
	// so a step interrupted there must be able to run again.
	for _, field := range []string{"GitHubID", "OidcID", "InviterID", "InviteRewarded", "InviteReward"} {
		if m.HasColumn(&v31User{}, field) {
			continue
		}
		if err := m.AddColumn(&v31User{}, field); err != nil {
			return err
		}
	}
	for _, idx := range []string{"GitHubID", "OidcID"} {
		if m.HasIndex(&v31User{}, idx) {
			continue
		}
		if err := m.CreateIndex(&v31User{}, idx); err != nil {
			return err
		}
	}
	return nil
}

// v31User names the users columns this step adds.
type v31User struct {
	GitHubID       *string `gorm:"column:github_id;size:128;uniqueIndex:idx_users_github_id"`
	OidcID         *string `gorm:"column:oidc_id;size:255;uniqueIndex:idx_users_oidc_id"`
	InviterID      int64   `gorm:"column:inviter_id;not null;default:0;index"`
	InviteRewarded bool    `gorm:"not null;default:false"`
	InviteReward   int64   `gorm:"not null;default:0"`
}

func (v31User) TableName() string { return "users" }
