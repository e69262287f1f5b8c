package store

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/internal/channel"
)

// RoutingData returns every enabled channel and every enabled ability: what
// the relay's routing table is built from.
func (s *Store) RoutingData(ctx context.Context) ([]Channel, []Ability, error) {
	var channels []Channel
	if err := s.read(ctx).Where("status = ?", channel.StatusEnabled).Find(&channels).Error; err != nil {
		return nil, nil, wrap("load channels", err)
	}
	var abilities []Ability
	err := s.read(ctx).Where("enabled = ?", true).Order("priority DESC, channel_id").Find(&abilities).Error
	return channels, abilities, wrap("load abilities", err)
}

// AutoDisableChannel sets an enabled channel to status 3 (disabled by the
// system) with the reason, and disables its abilities in the same
// transaction. A channel an admin changed meanwhile is left alone.
func (s *Store) AutoDisableChannel(ctx context.Context, id int64, reason string) error {
	return s.write(ctx, "auto-disable channel", func(tx *Tx) error {
		res := tx.db.Model(&Channel{}).Where("id = ? AND status = ?", id, channel.StatusEnabled).
			Updates(map[string]any{"status": channel.StatusAutoDisabled, "last_error": reason, "test_time": time.Now().Unix()})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var c Channel
		if err := tx.db.Where("id = ?", id).Take(&c).Error; err != nil {
			return err
		}
		if err := tx.changed("channels", "UPDATE", id); err != nil {
			return err
		}
		return tx.rebuildAbilities(&c)
	})
}

// AutoDisabledChannelsDue returns up to limit channels disabled by the
// system whose last test (or disabling) was at or before the unix time
// before, least recently tested first: what the periodic retest tries.
func (s *Store) AutoDisabledChannelsDue(ctx context.Context, before int64, limit int) ([]Channel, error) {
	var channels []Channel
	err := s.read(ctx).Where("status = ? AND test_time <= ?", channel.StatusAutoDisabled, before).
		Order("test_time, id").Limit(limit).Find(&channels).Error
	return channels, wrap("load auto-disabled channels", err)
}

// ReEnableChannel sets a channel disabled by the system back to enabled
// after the successful test t, and rebuilds its abilities in the same
// transaction. A channel an admin changed meanwhile (enabled, disabled by
// hand, deleted) is left alone: it reports false.
func (s *Store) ReEnableChannel(ctx context.Context, id int64, t ChannelTest) (bool, error) {
	var done bool
	err := s.write(ctx, "re-enable channel", func(tx *Tx) error {
		done = false // the closure may run again after a retried commit
		res := tx.db.Model(&Channel{}).Where("id = ? AND status = ?", id, channel.StatusAutoDisabled).
			Updates(map[string]any{"status": channel.StatusEnabled, "last_error": "", "test_time": t.Time, "response_time": t.ResponseTime})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var c Channel
		if err := tx.db.Where("id = ?", id).Take(&c).Error; err != nil {
			return err
		}
		if err := tx.changed("channels", "UPDATE", id); err != nil {
			return err
		}
		done = true
		return tx.rebuildAbilities(&c)
	})
	return done && err == nil, err
}
