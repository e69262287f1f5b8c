package store

import (
	"context"
	"slices"

	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/user"
)

// rebuildAbilities replaces channel c's abilities with one row per group ×
// model of c, enabled when c is. It runs in the transaction that changed c,
// so the relay never sees a channel and its abilities disagree.
func (tx *Tx) rebuildAbilities(c *Channel) error {
	if err := tx.deleteAbilities(c.ID); err != nil {
		return err
	}
	groups, models := channel.Split(c.Groups), channel.Split(c.Models)
	n := len(groups) * len(models)
	if n == 0 {
		return nil
	}
	first, err := tx.allocIDs("abilities", n)
	if err != nil {
		return err
	}
	rows := make([]Ability, 0, n)
	for _, g := range groups {
		for _, m := range models {
			rows = append(rows, Ability{
				ID: nthID(first, len(rows)), Group: g, Model: m, ChannelID: c.ID,
				Enabled: c.Status == channel.StatusEnabled, Priority: c.Priority, Weight: c.Weight,
			})
		}
	}
	if err := tx.db.CreateInBatches(rows, 200).Error; err != nil {
		return err
	}
	if err := tx.keepZeroWeight(&Ability{}, "channel_id", c.ID, c.Weight); err != nil {
		return err
	}
	for i := range rows {
		if err := tx.changed("abilities", "INSERT", rows[i].ID); err != nil {
			return err
		}
	}
	return nil
}

// keepZeroWeight undoes GORM's insert rule for weight 0: Create replaces a
// zero field by its column default (weight 1), but 0 is a valid weight.
func (tx *Tx) keepZeroWeight(model any, col string, id, weight int64) error {
	if weight != 0 {
		return nil
	}
	return tx.db.Model(model).Where(col+" = ?", id).Update("weight", 0).Error
}

// deleteAbilities removes every ability of channel id.
func (tx *Tx) deleteAbilities(channelID int64) error {
	var ids []int64
	if err := tx.db.Model(&Ability{}).Where("channel_id = ?", channelID).Pluck("id", &ids).Error; err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	if err := tx.db.Where("channel_id = ?", channelID).Delete(&Ability{}).Error; err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.changed("abilities", "DELETE", id); err != nil {
			return err
		}
	}
	return nil
}

// AbilitiesFor returns the enabled abilities serving model for group,
// highest priority first (ties by channel id, so the order is stable). The
// relay picks a channel among the first priority tier by weight.
func (s *Store) AbilitiesFor(ctx context.Context, group, model string) ([]Ability, error) {
	var rows []Ability
	err := s.read(ctx).Where("ability_group = ? AND model = ? AND enabled = ?", group, model, true).
		Order("priority DESC, channel_id").Find(&rows).Error
	return rows, wrap("list abilities", err)
}

// ChannelModels returns every model name some channel serves, enabled or
// not, sorted.
func (s *Store) ChannelModels(ctx context.Context) ([]string, error) {
	var models []string
	err := s.read(ctx).Model(&Ability{}).Distinct("model").Pluck("model", &models).Error
	return sorted(models), wrap("list channel models", err)
}

// OfferedModels returns the models group can call, sorted: an enabled
// channel serves them for group and they have an enabled price (a model
// without one is refused by the relay). The two lists are joined in Go:
// their name columns need not share a collation on MySQL.
func (s *Store) OfferedModels(ctx context.Context, group string) ([]string, error) {
	var models, priced []string
	err := s.read(ctx).Model(&Ability{}).Where("ability_group = ? AND enabled = ?", group, true).
		Distinct("model").Pluck("model", &models).Error
	if err != nil {
		return nil, wrap("list group models", err)
	}
	err = s.read(ctx).Model(&ModelPrice{}).Where("enabled = ?", true).Pluck("model_name", &priced).Error
	if err != nil {
		return nil, wrap("list priced models", err)
	}
	isPriced := make(map[string]bool, len(priced))
	for _, m := range priced {
		isPriced[m] = true
	}
	models = slices.DeleteFunc(models, func(m string) bool { return !isPriced[m] })
	return sorted(models), nil
}

// GroupNames returns every group name in use, sorted: groups with a price
// row, groups of users that are not deleted, and groups of channels.
func (s *Store) GroupNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.read(ctx).Raw(`SELECT group_name FROM group_prices
		UNION SELECT user_group FROM users WHERE status <> ?
		UNION SELECT ability_group FROM abilities`, user.StatusDeleted).Scan(&names).Error
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	return sorted(names), wrap("list groups", err)
}

// sorted sorts in Go, not SQL: collations differ between the engines, and
// lists must read the same on all of them. It never returns nil, so an empty
// list is [] in JSON.
func sorted(list []string) []string {
	if list == nil {
		return []string{}
	}
	slices.Sort(list)
	return list
}
