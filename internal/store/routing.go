package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

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

// RetireChannelKey takes the key keyID of enabled channel id's pool out of
// service after a refusal, with the reason; when it was the last key in
// service the channel is auto-disabled as well, as a one-key channel is
// (AutoDisableChannel). A key no longer in the pool, or a channel not
// enabled, is left alone. It reports whether the channel went out.
func (s *Store) RetireChannelKey(ctx context.Context, id int64, keyID, reason string) (bool, error) {
	var out bool
	err := s.write(ctx, "retire channel key", func(tx *Tx) error {
		out = false // the closure may run again after a retried commit
		var c Channel
		if err := tx.forUpdate().Where("id = ? AND status = ?", id, channel.StatusEnabled).Take(&c).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil
			}
			return err
		}
		now := time.Now().Unix()
		list, allOut, changed := channel.RetireKey(c.Key, c.DisabledKeys, keyID, reason, now)
		if !changed {
			return nil
		}
		set := map[string]any{"disabled_keys": list}
		if allOut {
			set["status"], set["last_error"], set["test_time"] = channel.StatusAutoDisabled, channel.CleanLastError(reason), now
		}
		if err := tx.db.Model(&Channel{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		if err := tx.changed("channels", "UPDATE", id); err != nil {
			return err
		}
		if !allOut {
			return nil
		}
		out = true
		c.Status = channel.StatusAutoDisabled
		return tx.rebuildAbilities(&c)
	})
	return out, err
}

// RestoreChannelKeys puts the keys ids of channel id's pool back in
// service: an admin's re-enable, or a recheck that found them working. A
// channel the system disabled (its keys were all out) is enabled again
// when one comes back; a channel an admin disabled stays so. It reports
// whether the channel was re-enabled. ErrNotFound: no such channel.
func (s *Store) RestoreChannelKeys(ctx context.Context, id int64, ids []string, t ChannelTest) (bool, error) {
	var enabled bool
	err := s.write(ctx, "restore channel keys", func(tx *Tx) error {
		enabled = false
		var c Channel
		if err := tx.forUpdate().Where("id = ?", id).Take(&c).Error; err != nil {
			return err
		}
		set := map[string]any{"disabled_keys": channel.RestoreKeys(c.Key, c.DisabledKeys, ids...)}
		reEnable := c.Status == channel.StatusAutoDisabled && len(ids) > 0
		if reEnable {
			set["status"], set["last_error"] = channel.StatusEnabled, ""
		}
		if t.Time != 0 {
			set["test_time"] = t.Time
			if t.OK {
				set["response_time"] = t.ResponseTime
			}
		}
		if err := tx.db.Model(&Channel{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		if err := tx.changed("channels", "UPDATE", id); err != nil {
			return err
		}
		if !reEnable {
			return nil
		}
		enabled = true
		c.Status = channel.StatusEnabled
		return tx.rebuildAbilities(&c)
	})
	return enabled, wrap("restore channel keys", err)
}

// ChannelsWithRetiredKeysDue returns up to limit enabled channels with
// keys out of service whose last test was at or before the unix time
// before: the recheck tests those keys.
func (s *Store) ChannelsWithRetiredKeysDue(ctx context.Context, before int64, limit int) ([]Channel, error) {
	var channels []Channel
	err := s.read(ctx).Where("status = ? AND test_time <= ? AND disabled_keys IS NOT NULL AND disabled_keys <> ''", channel.StatusEnabled, before).
		Order("test_time, id").Limit(limit).Find(&channels).Error
	return channels, wrap("load channels with retired keys", err)
}
