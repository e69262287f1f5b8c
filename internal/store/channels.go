package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/channel"
)

// CreateChannel inserts c, allocating its id and created time, and its
// abilities in the same transaction.
func (s *Store) CreateChannel(ctx context.Context, c *Channel) error {
	return s.write(ctx, "create channel", func(tx *Tx) error {
		id, err := tx.allocIDs("channels", 1)
		if err != nil {
			return err
		}
		c.ID, c.CreatedTime = id, time.Now().Unix()
		weight := c.Weight
		if err := tx.db.Create(c).Error; err != nil {
			return err
		}
		if err := tx.keepZeroWeight(&Channel{}, "id", c.ID, weight); err != nil {
			return err
		}
		c.Weight = weight
		if err := tx.changed("channels", "INSERT", c.ID); err != nil {
			return err
		}
		return tx.rebuildAbilities(c)
	})
}

// ChannelByID returns the channel with id.
func (s *Store) ChannelByID(ctx context.Context, id int64) (Channel, error) {
	var c Channel
	err := s.read(ctx).Where("id = ?", id).Take(&c).Error
	return c, wrap("get channel", err)
}

// ListChannels returns channels newest first and the total count. A
// non-empty keyword matches name, base URL or model list as a substring, or
// the id exactly when it is a number.
func (s *Store) ListChannels(ctx context.Context, keyword string, p Page) ([]Channel, int64, error) {
	q := s.read(ctx).Model(&Channel{})
	if keyword != "" {
		cond := whereLike(s.db, keyword, "name", "base_url", "models")
		if id, err := strconv.ParseInt(keyword, 10, 64); err == nil {
			cond = cond.Or("id = ?", id)
		}
		q = q.Where(cond)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count channels", err)
	}
	var channels []Channel
	err := p.apply(q.Order("id DESC")).Find(&channels).Error
	return channels, total, wrap("list channels", err)
}

// ChannelPatch lists the channel fields an update may change; nil means
// unchanged. Values are stored as given: the caller validates them.
type ChannelPatch struct {
	Type         *int
	Name         *string
	Key          *string
	BaseURL      *string
	Models       *string
	Groups       *string
	Priority     *int64
	Weight       *int64
	ModelMapping *string
	Setting      *string
	Other        *string
	Status       *int
}

// UpdateChannel applies p to channel id and rebuilds its abilities from the
// updated row in the same transaction.
func (s *Store) UpdateChannel(ctx context.Context, id int64, p ChannelPatch) error {
	set := map[string]any{}
	put := func(col string, v any, ok bool) {
		if ok {
			set[col] = v
		}
	}
	put("type", deref(p.Type), p.Type != nil)
	put("name", deref(p.Name), p.Name != nil)
	put("channel_key", deref(p.Key), p.Key != nil)
	put("base_url", deref(p.BaseURL), p.BaseURL != nil)
	put("models", deref(p.Models), p.Models != nil)
	put("channel_groups", deref(p.Groups), p.Groups != nil)
	put("priority", deref(p.Priority), p.Priority != nil)
	put("weight", deref(p.Weight), p.Weight != nil)
	put("model_mapping", deref(p.ModelMapping), p.ModelMapping != nil)
	put("setting", deref(p.Setting), p.Setting != nil)
	put("other", deref(p.Other), p.Other != nil)
	put("status", deref(p.Status), p.Status != nil)
	return s.write(ctx, "update channel", func(tx *Tx) error {
		var c Channel
		if err := tx.forUpdate().Where("id = ?", id).Take(&c).Error; err != nil {
			return err
		}
		if p.Status != nil && *p.Status == channel.StatusEnabled && c.Status != channel.StatusEnabled {
			// An admin enabling a channel puts its whole key pool back in
			// service (a one-key channel's key was out with it).
			set["disabled_keys"] = ""
		}
		if len(set) > 0 {
			if err := tx.db.Model(&Channel{}).Where("id = ?", id).Updates(set).Error; err != nil {
				return err
			}
			if err := tx.db.Where("id = ?", id).Take(&c).Error; err != nil {
				return err
			}
		}
		if err := tx.changed("channels", "UPDATE", id); err != nil {
			return err
		}
		return tx.rebuildAbilities(&c)
	})
}

// DeleteChannel removes channel id and its abilities (a hard delete: logs
// keep the channel id as a plain number).
func (s *Store) DeleteChannel(ctx context.Context, id int64) error {
	return s.write(ctx, "delete channel", func(tx *Tx) error {
		if err := tx.deleteAbilities(id); err != nil {
			return err
		}
		res := tx.db.Where("id = ?", id).Delete(&Channel{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("channel %d: %w", id, ErrNotFound)
		}
		return tx.changed("channels", "DELETE", id)
	})
}

// ChannelTest is the outcome of one reachability test of a channel.
type ChannelTest struct {
	Time         int64 // unix seconds
	ResponseTime int64 // ms; recorded only when OK
	OK           bool
	Error        string // recorded as last_error when not OK
}

// RecordChannelTest stores a test outcome on channel id: the test time
// always; on success the response time and a cleared last error; on failure
// the error, keeping the last successful response time.
func (s *Store) RecordChannelTest(ctx context.Context, id int64, t ChannelTest) error {
	set := map[string]any{"test_time": t.Time, "last_error": t.Error}
	if t.OK {
		set["response_time"], set["last_error"] = t.ResponseTime, ""
	}
	return s.write(ctx, "record channel test", func(tx *Tx) error {
		// Read first: MySQL counts an update that changes nothing (two tests
		// in one second) as no row affected.
		var n int64
		if err := tx.db.Model(&Channel{}).Where("id = ?", id).Count(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("channel %d: %w", id, ErrNotFound)
		}
		if err := tx.db.Model(&Channel{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		return tx.changed("channels", "UPDATE", id)
	})
}
